package broker

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"testing"

	"github.com/airlock/airlock/config"
	"github.com/airlock/airlock/metrics"
)

// TestRun: a broker listens, answers, reloads on request and stops
// cleanly when its context ends.
func TestRun(t *testing.T) {
	data := filepath.Join(t.TempDir(), "data")
	cfg, err := config.Load(config.Sources{Flags: map[string]any{"listen": "127.0.0.1:0", "data": data, "no_builtin": true,
		"exec.cache_dir": filepath.Join(data, "cache")}})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	reload := make(chan os.Signal, 1)
	healthz := make(chan int, 1)
	listening := func(addr string) {
		go func() {
			reload <- os.Interrupt // any value asks for a reload
			resp, err := http.Get("http://" + addr + "/healthz")
			if err != nil {
				healthz <- 0
				return
			}
			resp.Body.Close()
			healthz <- resp.StatusCode
		}()
	}
	done := make(chan error, 1)
	go func() {
		done <- Run(ctx, RunOptions{Reload: reload, Listening: listening, BuildOptions: BuildOptions{Config: cfg,
			Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), Metrics: metrics.New()}})
	}()
	if code := <-healthz; code != http.StatusOK {
		t.Errorf("healthz: %d", code)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("Run: %v", err)
	}
}

// TestRunStartFails: a listen address that cannot be bound is an error.
func TestRunStartFails(t *testing.T) {
	data := filepath.Join(t.TempDir(), "data")
	cfg, err := config.Load(config.Sources{Flags: map[string]any{"listen": "192.0.2.1:0", "data": data, "no_builtin": true,
		"exec.cache_dir": filepath.Join(data, "cache")}})
	if err != nil {
		t.Skip("the address is refused before Run:", err)
	}
	err = Run(context.Background(), RunOptions{BuildOptions: BuildOptions{Config: cfg, Token: "t0123456789abcdef0123456789abcdef",
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), Metrics: metrics.New()}})
	if err == nil {
		t.Fatal("Run started on an address it cannot bind")
	}
	t.Log(err)
}
