package e2e

import (
	"bufio"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// BenchmarkServeColdStart times `airlock serve` from exec to its listening
// line, with the bundled plugins admitted (notes mapped to a root), and
// reports as stop-ms how long its SIGTERM exit took after that. "cached"
// reuses one compilation cache, warmed first; "uncached" gives every
// start an empty one, so both bundled modules are compiled (in the
// background, after the listening line). Run without -race: the race
// detector slows wazero's compiler several times over.
func BenchmarkServeColdStart(b *testing.B) {
	coldStart(b, serveOnce)
}

// BenchmarkMCPColdStart times `airlock mcp` from exec to its answer to
// tools/list, sent with initialize and notifications/initialized at once,
// as a host opening the server does; stop-ms is how long it took to exit
// once its stdin closed. Cached and uncached as BenchmarkServeColdStart.
func BenchmarkMCPColdStart(b *testing.B) {
	coldStart(b, mcpOnce)
}

// coldStart runs once with a warmed compilation cache and with an empty
// one for each start.
func coldStart(b *testing.B, once func(b *testing.B, notes, cache string) time.Duration) {
	notes := b.TempDir()
	warm := b.TempDir()
	once(b, notes, warm) // fill the cache
	b.Run("cached", func(b *testing.B) {
		var stop time.Duration
		for range b.N {
			b.StartTimer() // once stops it
			stop += once(b, notes, warm)
		}
		b.ReportMetric(float64(stop.Milliseconds())/float64(b.N), "stop-ms")
	})
	b.Run("uncached", func(b *testing.B) {
		var stop time.Duration
		for range b.N {
			b.StopTimer()
			cache, err := os.MkdirTemp("", "airlock-cold-")
			if err != nil {
				b.Fatal(err)
			}
			b.StartTimer()
			stop += once(b, notes, cache)
			os.RemoveAll(cache)
		}
		b.ReportMetric(float64(stop.Milliseconds())/float64(b.N), "stop-ms")
	})
}

// coldCommand is airlock sub with args on the notes root and with its
// data and compilation cache in cache.
func coldCommand(sub, notes, cache string, args ...string) *exec.Cmd {
	cmd := exec.Command(binPath, append([]string{sub, "--root", "notes=" + notes, "--data", filepath.Join(cache, "data")}, args...)...)
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + cache, "AIRLOCK_EXEC_CACHE_DIR=" + filepath.Join(cache, "cc")}
	return cmd
}

// serveOnce starts serve, reads its listening line, and stops the timer
// for its SIGTERM exit, whose duration it returns.
func serveOnce(b *testing.B, notes, cache string) time.Duration {
	cmd := coldCommand("serve", notes, cache, "--listen", "127.0.0.1:0")
	out, err := cmd.StdoutPipe()
	if err != nil {
		b.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil || !strings.Contains(line, `"listening"`) {
		b.Fatalf("no listening line: %q %v", line, err)
	}
	b.StopTimer()
	start := time.Now()
	_ = cmd.Process.Signal(syscall.SIGTERM)
	if err := cmd.Wait(); err != nil {
		b.Fatalf("serve exited: %v", err)
	}
	return time.Since(start)
}

// mcpOnce starts mcp, opens a session and reads the answer to tools/list,
// then stops the timer for its exit on a closed stdin, whose duration it
// returns.
func mcpOnce(b *testing.B, notes, cache string) time.Duration {
	cmd := coldCommand("mcp", notes, cache)
	in, err := cmd.StdinPipe()
	if err != nil {
		b.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		b.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	_, err = io.WriteString(in, initializeAt(latestRevision)+"\n"+
		`{"jsonrpc":"2.0","method":"notifications/initialized"}`+"\n"+
		`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`+"\n")
	if err != nil {
		b.Fatal(err)
	}
	r := bufio.NewReader(out)
	for {
		line, err := r.ReadString('\n')
		if err != nil {
			b.Fatalf("no tools/list answer: %v", err)
		}
		var m struct {
			ID     *int            `json:"id"`
			Result json.RawMessage `json:"result"`
		}
		if json.Unmarshal([]byte(line), &m) == nil && m.ID != nil && *m.ID == 1 {
			if !strings.Contains(string(m.Result), `"read_notes"`) {
				b.Fatalf("tools/list without read_notes: %s", line)
			}
			break
		}
	}
	b.StopTimer()
	start := time.Now()
	in.Close()
	if err := cmd.Wait(); err != nil {
		b.Fatalf("mcp exited: %v", err)
	}
	return time.Since(start)
}
