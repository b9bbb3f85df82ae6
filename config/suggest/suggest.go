// Package suggest names the word an operator probably meant when a name
// they typed (a setting, a key of plugin.json) names nothing: the one
// "did you mean …?" rule of every message that offers one.
package suggest

import (
	"slices"

	"github.com/agnivade/levenshtein"
)

// Nearest is the candidate closest to typed by edit distance, when it is
// close enough to be the word meant (at most a third of typed's letters
// differ, and at least two); "" otherwise. Ties go to the first in
// sorted order, so the answer is stable. candidates is not changed.
func Nearest(typed string, candidates []string) string {
	sorted := slices.Sorted(slices.Values(candidates))
	best, bestD := "", max(2, len(typed)/3)+1
	for _, c := range sorted {
		if d := levenshtein.ComputeDistance(typed, c); d < bestD && c != typed {
			best, bestD = c, d
		}
	}
	return best
}
