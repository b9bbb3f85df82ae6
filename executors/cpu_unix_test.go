//go:build unix

package executors

import (
	"syscall"
	"testing"
	"time"
)

// reportCPU starts measuring the process's CPU time (user and system, all
// threads); the function it returns reports it per iteration as
// cpu-ns/op. Call it after the setup, and the returned function once the
// loop is done (defer reportCPU(b)()).
func reportCPU(b *testing.B) func() {
	start := cpuTime()
	return func() {
		if b.N > 0 {
			b.ReportMetric(float64(cpuTime()-start)/float64(b.N), "cpu-ns/op")
		}
	}
}

func cpuTime() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
