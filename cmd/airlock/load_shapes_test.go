package main

import (
	"slices"
	"strings"
	"testing"
)

// TestCallersFlag: -c takes one number or a list of shapes, each at least
// 1, at most maxShapes; a refusal names the flag's rule.
func TestCallersFlag(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want []int
		err  string
	}{
		{in: "4", want: []int{4}},
		{in: "1,4", want: []int{1, 4}},
		{in: " 1 , 2 ", want: []int{1, 2}},
		{in: "0", err: "--concurrency must be at least 1, got 0"},
		{in: "1,-3", err: "--concurrency must be at least 1, got -3"},
		{in: "1,x", err: `"x" is not a number of callers`},
		{in: "1,", err: `"" is not a number of callers`},
		{in: "1,1,1,1,1,1,1,1,1", err: "at most 8 concurrencies"},
	} {
		var f callersFlag
		err := f.Set(tc.in)
		switch {
		case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
			t.Errorf("-c %q: error %v, want %q", tc.in, err, tc.err)
		case tc.err == "" && (err != nil || !slices.Equal(f, tc.want)):
			t.Errorf("-c %q: %v %v, want %v", tc.in, f, err, tc.want)
		}
	}
	f := callersFlag{1, 4}
	if f.String() != "1,4" {
		t.Errorf("String() = %q", f.String())
	}
}
