package main

import (
	"fmt"
	"strconv"
	"strings"
)

// maxShapes bounds how many concurrencies one `load calls` run measures.
const maxShapes = 8

// callersFlag is -c/--concurrency of `airlock load calls`: one number of
// callers, or a comma-separated list (-c 1,4) measured one after the other
// in the same run, each beside its own baseline, so the 1-caller and the
// 4-caller shapes are printed together.
type callersFlag []int

func (f *callersFlag) String() string {
	parts := make([]string, len(*f))
	for i, n := range *f {
		parts[i] = strconv.Itoa(n)
	}
	return strings.Join(parts, ",")
}

func (f *callersFlag) Set(s string) error {
	var out []int
	for part := range strings.SplitSeq(s, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(part))
		if err != nil {
			return fmt.Errorf("%q is not a number of callers", part)
		}
		if n < 1 {
			return fmt.Errorf("--concurrency must be at least 1, got %d", n)
		}
		out = append(out, n)
	}
	if len(out) > maxShapes {
		return fmt.Errorf("at most %d concurrencies in one run, got %d", maxShapes, len(out))
	}
	*f = out
	return nil
}

func (f *callersFlag) Type() string { return "CALLERS[,CALLERS]" }
