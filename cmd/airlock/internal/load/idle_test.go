package load

import (
	"math/big"
	"os"
	"strings"
	"testing"
	"time"
)

func TestParseMemMetrics(t *testing.T) {
	body := "# HELP go_goroutines Number of goroutines.\n# TYPE go_goroutines gauge\ngo_goroutines 10013\n" +
		"go_memstats_heap_inuse_bytes 1.25e+08\ngo_memstats_stack_inuse_bytes 4.3384832e+07\n" +
		"go_memstats_heap_inuse_bytes_total 7\nprocess_resident_memory_bytes 2.06225408e+08\n" +
		"airlock_connections_evicted_total{phase=\"idle\"} 3\nairlock_connections_evicted_total{phase=\"upgrade\"} 2\n" +
		"airlock_connections_refused_total 4\nairlock_connections_open 4096\n"
	s, err := parseMemMetrics([]byte(body))
	if err != nil {
		t.Fatal(err)
	}
	if s != (memSample{rss: 206225408, goroutines: 10013, heap: 125000000, stack: 43384832, capped: 9}) {
		t.Fatalf("%+v", s)
	}
}

// TestParseMemMetricsRefusals names each body that yields no figures.
func TestParseMemMetricsRefusals(t *testing.T) {
	for name, body := range map[string]string{
		"no RSS":           "go_goroutines 3\n",
		"RSS not a number": "process_resident_memory_bytes lots\n",
		"empty":            "",
	} {
		if _, err := parseMemMetrics([]byte(body)); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
}

func TestParseVmRSS(t *testing.T) {
	status := "Name:\tairlock\nVmHWM:\t  300000 kB\nVmRSS:\t  206228 kB\nThreads:\t9\n"
	rss, err := parseVmRSS([]byte(status))
	if err != nil || rss != 206228<<10 {
		t.Fatalf("%d, %v", rss, err)
	}
	for name, bad := range map[string]string{
		"no VmRSS":     "Name:\tairlock\n",
		"not kB":       "VmRSS:\t 12 MB\n",
		"not a number": "VmRSS:\t x kB\n",
		"no unit":      "VmRSS:\t 12\n",
	} {
		if _, err := parseVmRSS([]byte(bad)); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
}

// TestReadProcRSSSelf reads this process's own status, the file the
// floor's figure comes from.
func TestReadProcRSSSelf(t *testing.T) {
	if _, err := os.Stat("/proc/self/status"); err != nil {
		t.Skip("no /proc here")
	}
	s, err := readProcRSS(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	if s.rss <= 0 {
		t.Fatalf("rss %d", s.rss)
	}
}

func TestIdleOptionsCheck(t *testing.T) {
	ok := IdleOptions{Sessions: 1, Views: 1}
	if err := ok.Check(); err != nil {
		t.Fatal(err)
	}
	for name, o := range map[string]IdleOptions{
		"no sessions":     {Views: 1},
		"no views":        {Sessions: 1},
		"negative settle": {Sessions: 1, Views: 1, Settle: -time.Second},
		"negative pid":    {Sessions: 1, Views: 1, BrokerPID: -1},
	} {
		if err := o.Check(); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
}

func FuzzParseMemMetrics(f *testing.F) {
	f.Add([]byte("process_resident_memory_bytes 1e+08\ngo_goroutines 12\n"))
	f.Add([]byte("process_resident_memory_bytes NaN\n"))
	f.Fuzz(func(t *testing.T, body []byte) {
		s, err := parseMemMetrics(body)
		if err == nil && s.rss == 0 {
			t.Fatal("accepted a body without RSS")
		}
	})
}

func FuzzParseVmRSS(f *testing.F) {
	f.Add([]byte("VmRSS:\t  206228 kB\n"))
	f.Add([]byte("VmRSS: 9223372036854775807 kB\n"))
	f.Add([]byte("VmRSS: 9007199254740991 kB\n"))
	f.Add([]byte("VmRSS: -5 kB\n"))
	f.Add([]byte("Name: x\nVmRSS: +12 kB\nVmRSS: 99 kB\n"))
	f.Fuzz(func(t *testing.T, status []byte) {
		rss, err := parseVmRSS(status)
		if err != nil {
			return
		}
		// An accepted figure is the first VmRSS line's kB, times 1024
		// exactly: never negative, never wrapped.
		var kb *big.Int
		for line := range strings.Lines(string(status)) {
			if rest, ok := strings.CutPrefix(line, "VmRSS:"); ok {
				if f := strings.Fields(rest); len(f) == 2 && f[1] == "kB" {
					kb, _ = new(big.Int).SetString(f[0], 10)
				}
				break
			}
		}
		if kb == nil || kb.Sign() < 0 || new(big.Int).Lsh(kb, 10).Cmp(big.NewInt(rss)) != 0 {
			t.Fatalf("%q: accepted as %d bytes, which is not its first VmRSS line's kB", status, rss)
		}
	})
}
