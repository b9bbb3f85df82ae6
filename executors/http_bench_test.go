package executors_test

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"

	"github.com/airlock/airlock/broker"
	"github.com/airlock/airlock/config"
	"github.com/airlock/airlock/executors"
	"github.com/airlock/airlock/executors/wire"
	"github.com/airlock/airlock/metrics"
)

// BenchmarkReadNotesHTTP is the whole path a caller sees: POST /v1/calls
// on a real loopback listener, token check, envelope validation, routing,
// the executors and the answer's encoding, with keep-alive connections. It
// runs in the same `go test -bench ReadNotes` invocation as the plain
// wazero baseline (BenchmarkRawWazeroReadNotes) so the ratio is measured
// on one machine state.
func BenchmarkReadNotesHTTP(b *testing.B) {
	url, body := httpBroker(b)
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64}}
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		postReadNotes(b, client, url, body)
	}
}

func BenchmarkReadNotesHTTPParallel(b *testing.B) {
	url, body := httpBroker(b)
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64}}
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			postReadNotes(b, client, url, body)
		}
	})
}

const benchToken = "bench-launch-token-7c2e9a41d0b36f58"

// httpBroker builds a whole broker in-process with the bundled plugins and
// a one-note root, listening on a free loopback port.
func httpBroker(b *testing.B) (string, []byte) {
	b.Helper()
	notes := b.TempDir()
	if err := os.WriteFile(filepath.Join(notes, "welcome.md"), []byte("# Welcome\n\nA note to read.\n"), 0o644); err != nil {
		b.Fatal(err)
	}
	data := b.TempDir()
	cfg, err := config.Load(config.Sources{
		Flags: map[string]any{"listen": "127.0.0.1:0", "data": data, "exec.max_concurrent": 64},
		Roots: map[string]string{"notes": notes},
	})
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	logger := slog.New(slog.NewJSONHandler(io.Discard, nil))
	br, err := broker.Build(ctx, broker.BuildOptions{Config: cfg, Token: benchToken, Logger: logger, Metrics: metrics.New()})
	if err != nil {
		b.Fatal(err)
	}
	ln, mln, err := br.Server.Listen()
	if err != nil {
		b.Fatal(err)
	}
	go func() { _ = br.Server.Serve(ln, mln) }()
	b.Cleanup(func() { _ = br.Close(context.Background()) })

	var bounds []byte
	for _, d := range br.Router.Descriptors() {
		if d.DescriptorID == "notes" {
			bounds = d.Bounds.Canonical()
		}
	}
	if bounds == nil {
		b.Fatal("notes is not admitted")
	}
	body := []byte(`{"v":1,"callId":"call_1","tool":"read_notes","descriptorId":"notes","args":{"path":"welcome.md"},"boundsEcho":` + string(bounds) + `}`)
	url := "http://" + ln.Addr().String() + "/v1/calls"
	postReadNotes(b, http.DefaultClient, url, body)
	return url, body
}

func postReadNotes(b *testing.B, client *http.Client, url string, body []byte) {
	req, _ := http.NewRequest(http.MethodPost, url, bytes.NewReader(body))
	req.Header.Set("X-Tensorviz-Token", benchToken)
	resp, err := client.Do(req)
	if err != nil {
		b.Fatal(err)
	}
	data, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		b.Fatal(err)
	}
	if a, err := wire.ParseAnswer(data); err != nil || !a.OK {
		b.Fatalf("read_notes over HTTP: %v %s", err, data)
	}
}

// BenchmarkRawWazeroReadNotesHTTP is the floor of the HTTP path: plain
// wazero's reused instances behind a bare net/http handler on a loopback
// listener (baseline.HTTPFloor: the envelope read with encoding/json, no
// token, schema, routing, bounds or metrics), called as ReadNotesHTTP
// calls the broker. ReadNotesHTTP against it is what Airlock's own layers
// cost; against RawWazeroReadNotesReused it also counts the HTTP hop
// itself, which no broker can avoid. `airlock load calls
// --reuse-instance` measures the same floor in a process of its own.
func BenchmarkRawWazeroReadNotesHTTP(b *testing.B) {
	floor, args := executors.RawNotesHTTPFloor(b)
	srv := httptest.NewServer(floor)
	defer srv.Close()
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64}}
	body := []byte(`{"v":1,"callId":"call_1","tool":"read_notes","descriptorId":"notes","args":` + string(args) + `,"boundsEcho":{}}`)
	postReadNotes(b, client, srv.URL, body)
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		postReadNotes(b, client, srv.URL, body)
	}
}
