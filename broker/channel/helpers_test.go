package channel_test

import (
	"os"

	"github.com/prometheus/client_golang/prometheus/testutil"
)

func chmod(path string, mode os.FileMode) error { return os.Chmod(path, mode) }

func testutilTimeouts(w *world, kind string) float64 {
	return testutil.ToFloat64(w.reg.ChannelTimeouts.WithLabelValues(kind))
}
