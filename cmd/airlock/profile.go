package main

import (
	"fmt"
	"os"
	"runtime/pprof"

	"github.com/spf13/pflag"
)

// profileFlag is --cpuprofile FILE of `airlock serve` and `airlock load
// calls`: a CPU profile of the whole run written to FILE, for `go tool
// pprof`. It is off unless given, and it is a file, never an endpoint:
// nothing about the broker is served that was not served before
// (RATIONALE.md, "Why is profiling a file flag and not a pprof endpoint?").
type profileFlag struct{ path string }

func addProfileFlag(fs *pflag.FlagSet) *profileFlag {
	p := &profileFlag{}
	fs.StringVar(&p.path, "cpuprofile", "", "write a CPU profile of the run to `FILE` (for go tool pprof; off by default)")
	return p
}

// start begins profiling when the flag was given; the returned stop ends
// it and closes the file. Without the flag both are no-ops.
func (p *profileFlag) start() (stop func(), err error) {
	if p == nil || p.path == "" {
		return func() {}, nil
	}
	f, err := os.OpenFile(p.path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil { // a path that cannot be written: the one path rule, exit 2
		return nil, usageErr("--cpuprofile %s: %s", p.path, pathReason(err, folder))
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, fmt.Errorf("--cpuprofile: %w", err)
	}
	return func() { pprof.StopCPUProfile(); f.Close() }, nil
}
