package main

import (
	"github.com/spf13/pflag"

	"github.com/airlock/airlock/cmd/airlock/internal/load"
)

// relayRateFlags are `airlock load relay`'s open-loop flags: a fixed host
// rate, and several views×rate shapes in one invocation.
type relayRateFlags struct {
	rate   int
	shapes string
}

func addRelayRateFlags(fs *pflag.FlagSet) *relayRateFlags {
	f := &relayRateFlags{}
	fs.IntVar(&f.rate, "rate", 0, "each host sends `N` messages/s on a schedule (at most 128 ahead of its slowest view); 0: as fast as the views keep up, at most 32 ahead")
	fs.StringVar(&f.shapes, "shapes", "", "run each `VIEWSxRATE[,...]` shape in turn (--views and --rate per shape) and print one table; standard for "+load.StandardShapes)
	return f
}

// check names the first flag whose value cannot make a run, and parses
// --shapes (nil without it).
func (f *relayRateFlags) check() ([]load.Shape, error) {
	if f.rate < 0 || f.rate > load.MaxRate {
		return nil, usageErr("--rate must be between 0 and %d, got %d", load.MaxRate, f.rate)
	}
	if f.shapes == "" {
		return nil, nil
	}
	s := f.shapes
	if s == "standard" {
		s = load.StandardShapes
	}
	shapes, err := load.ParseShapes(s)
	if err != nil {
		return nil, usageErr("--shapes: %v", err)
	}
	return shapes, nil
}
