package e2e

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// BenchmarkServeColdStart times `airlock serve` from exec to its listening
// line, with the bundled plugins admitted (notes mapped to a root), and
// then its SIGTERM exit. "cached" reuses one compilation cache, warmed
// first; "uncached" gives every start an empty one, so both bundled
// modules are compiled each time. Run without -race: the race detector
// slows wazero's compiler several times over.
func BenchmarkServeColdStart(b *testing.B) {
	notes := b.TempDir()
	warm := b.TempDir()
	startOnce(b, notes, warm) // fill the cache
	b.Run("cached", func(b *testing.B) {
		for b.Loop() {
			startOnce(b, notes, warm)
		}
	})
	b.Run("uncached", func(b *testing.B) {
		for b.Loop() {
			b.StopTimer()
			cache, err := os.MkdirTemp("", "airlock-cold-")
			if err != nil {
				b.Fatal(err)
			}
			b.StartTimer()
			startOnce(b, notes, cache)
			b.StopTimer()
			os.RemoveAll(cache)
			b.StartTimer()
		}
	})
}

func startOnce(b *testing.B, notes, cache string) {
	cmd := exec.Command(binPath, "serve", "--listen", "127.0.0.1:0", "--root", "notes="+notes, "--data", filepath.Join(cache, "data"))
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + cache, "AIRLOCK_EXEC_CACHE_DIR=" + filepath.Join(cache, "cc")}
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
	_ = cmd.Process.Signal(syscall.SIGTERM)
	if err := cmd.Wait(); err != nil {
		b.Fatalf("serve exited: %v", err)
	}
}
