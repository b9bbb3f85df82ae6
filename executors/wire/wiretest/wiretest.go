// Package wiretest holds what the tests of several packages share about
// the wire: the reader of the golden folders under testdata/ and an
// oracle for the case-folded duplicate rule that does not use the code it
// checks (it folds with strings.EqualFold over encoding/json's tokens).
package wiretest

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// Case is one golden file: the input, and the expected outcome (a rule
// id, "ok", or what the reading package calls its other outcomes).
type Case struct {
	In, Want string
}

// Golden reads testdata/<dir>/*.txt of the repository (dir like
// "wire/call"): each file is the input, a line "----", then the expected
// outcome. Cases are keyed by file name without ".txt".
func Golden(t testing.TB, dir string) map[string]Case {
	t.Helper()
	_, self, _, _ := runtime.Caller(0)
	root := filepath.Join(filepath.Dir(self), "..", "..", "..", "testdata")
	files, err := filepath.Glob(filepath.Join(root, dir, "*.txt"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no golden files in %s: %v", dir, err)
	}
	cases := map[string]Case{}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		in, want, ok := strings.Cut(string(data), "\n----\n")
		if !ok {
			t.Fatalf("%s: no separator", f)
		}
		cases[strings.TrimSuffix(filepath.Base(f), ".txt")] = Case{in, strings.TrimSpace(want)}
	}
	return cases
}

// FoldDuplicate reports whether some object in data, at any depth, holds
// two keys equal under strings.EqualFold (exact duplicates included).
// data must be valid JSON; on anything else it reports what it saw before
// the error.
func FoldDuplicate(data []byte) bool {
	dup, _ := scan(data)
	return dup
}

// Depth is the deepest nesting of objects and arrays in data (0 for a
// scalar), for valid JSON.
func Depth(data []byte) int {
	_, depth := scan(data)
	return depth
}

func scan(data []byte) (dup bool, maxDepth int) {
	dec := json.NewDecoder(bytes.NewReader(data))
	var stack [][]string // keys of each open container; nil for arrays
	expectKey := false
	for {
		tok, err := dec.Token()
		if errors.Is(err, io.EOF) || err != nil {
			return dup, maxDepth
		}
		if expectKey && tok != json.Delim('}') {
			k := tok.(string)
			for _, o := range stack[len(stack)-1] {
				dup = dup || strings.EqualFold(o, k)
			}
			stack[len(stack)-1] = append(stack[len(stack)-1], k)
			expectKey = false
			continue
		}
		switch tok {
		case json.Delim('{'):
			stack = append(stack, []string{})
			maxDepth = max(maxDepth, len(stack))
			expectKey = true
			continue
		case json.Delim('['):
			stack = append(stack, nil)
			maxDepth = max(maxDepth, len(stack))
			continue
		case json.Delim('}'), json.Delim(']'):
			stack = stack[:len(stack)-1]
		}
		expectKey = len(stack) > 0 && stack[len(stack)-1] != nil
	}
}
