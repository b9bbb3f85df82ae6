package metrics

import (
	"regexp"
	"strings"
)

// styleRE is the one style of a label value from a closed set: lower-case
// ASCII words joined by '-', the spelling of the rule ids (RATIONALE.md,
// "Why is every label value kebab-case?").
var styleRE = regexp.MustCompile(`^[a-z0-9]+(-[a-z0-9]+)*$`)

// InStyle reports whether v is spelled in the label style. Other, the
// names of admitted descriptors and tools, and the build info labels are
// the only label values outside it.
func InStyle(v string) bool { return styleRE.MatchString(v) }

// Kebab spells a vocabulary term in the label style: INVALID_ORIGIN,
// focusNode, host_to_views and tools/call become invalid-origin,
// focus-node, host-to-views and tools-call. Other and values already in
// style come back unchanged. It is meant for closed sets only (a caller
// folds anything else into Other first).
func Kebab(s string) string {
	if s == Other || InStyle(s) {
		return s
	}
	var b strings.Builder
	sep := false   // a separator is due before the next letter or digit
	lower := false // the last rune written was a lower-case letter or digit
	for _, c := range s {
		switch {
		case c >= 'A' && c <= 'Z':
			if lower {
				sep = true
			}
			c += 'a' - 'A'
			lower = false
		case c >= 'a' && c <= 'z', c >= '0' && c <= '9':
			lower = true
		default: // '_', '/', '-', ' ', '.': a word boundary
			sep, lower = b.Len() > 0, false
			continue
		}
		if sep {
			b.WriteByte('-')
			sep = false
		}
		b.WriteRune(c)
	}
	return b.String()
}

// LabelInStyle reports whether label name of family carries value in the
// style, allowing the values that are data rather than vocabulary: Other,
// descriptor ids and tool names as admitted, and the build info.
func LabelInStyle(family, name, value string) bool {
	switch {
	case value == Other, InStyle(value):
		return true
	case name == "descriptor" || name == "tool":
		return true
	case family == Namespace+"_build_info":
		return true
	}
	return false
}
