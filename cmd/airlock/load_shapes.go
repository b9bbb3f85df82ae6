package main

import (
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/airlock/airlock/cmd/airlock/internal/load"
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

// printShapes prints one run's reports: as before for one concurrency,
// one after the other (a JSON array with --json) for several.
func (f *loadCallsFlags) printShapes(w io.Writer, reps []*load.CallsReport) {
	if len(reps) == 1 {
		f.print(w, reps[0])
		return
	}
	if f.asJSON {
		load.PrintJSON(w, reps)
		return
	}
	for i, rep := range reps {
		if i > 0 {
			fmt.Fprintln(w)
		}
		rep.Print(w)
	}
}
