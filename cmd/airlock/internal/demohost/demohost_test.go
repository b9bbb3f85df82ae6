package demohost

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/url"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/airlock/airlock/broker"
	"github.com/airlock/airlock/broker/localclient"
	"github.com/airlock/airlock/config"
	"github.com/airlock/airlock/executors/testkit"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

const token = "demo-host-test-token-0123456789abcdef"

// startBroker runs a whole broker in-process on a free loopback port.
func startBroker(t *testing.T) string {
	t.Helper()
	cfg, err := config.Load(config.Sources{Flags: map[string]any{"listen": "127.0.0.1:0", "data": t.TempDir(), "no_builtin": true}})
	if err != nil {
		t.Fatal(err)
	}
	logger := slog.New(slog.NewJSONHandler(io.Discard, nil))
	br, err := broker.Build(context.Background(), broker.BuildOptions{Config: cfg, Token: token, Logger: logger})
	if err != nil {
		t.Fatal(err)
	}
	ln, mln, err := br.Server.Listen()
	if err != nil {
		t.Fatal(err)
	}
	served := make(chan struct{})
	go func() { defer close(served); _ = br.Server.Serve(ln, mln) }()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		_ = br.Close(ctx)
		<-served
	})
	return "http://" + ln.Addr().String()
}

// view bootstraps a view from the demo's view URL, as the page would.
func view(t *testing.T, ctx context.Context, base, viewURL string) (*localclient.Conn, string) {
	t.Helper()
	u, err := url.Parse(viewURL)
	if err != nil {
		t.Fatal(err)
	}
	id, cred, ok := strings.Cut(u.Fragment, ".")
	if !ok || u.Path != "/local/view" || "http://"+u.Host != base {
		t.Fatalf("view URL %q", viewURL)
	}
	cookie, _, err := (&localclient.Client{Base: base}).Bootstrap(ctx, base, id, cred)
	if err != nil {
		t.Fatal(err)
	}
	v, err := localclient.DialView(ctx, base, base, id, cookie)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = v.Close() })
	c, err := v.Hello(ctx)
	if err != nil || !c.HostConnected {
		t.Fatalf("view hello: %+v %v", c, err)
	}
	return v, c.ViewID
}

// next returns the next message of one of the types, skipping the host's
// animation in between.
func next(t *testing.T, ctx context.Context, v *localclient.Conn, types ...string) *localclient.Message {
	t.Helper()
	for {
		m, err := v.Receive(ctx)
		if err != nil {
			t.Fatalf("waiting for %v: %v", types, err)
		}
		for _, typ := range types {
			if m.Type == typ {
				return m
			}
		}
		if m.Type == "error" {
			t.Fatalf("broker error while waiting for %v: %s", types, m.Raw)
		}
	}
}

// TestDemoHostAnswersEveryFamily: a view of the demo session sees the
// animated state and gets the reply of every request family, progress
// included, and a cancelled publish ends cancelled.
func TestDemoHostAnswersEveryFamily(t *testing.T) {
	base := startBroker(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	h, err := Start(ctx, Options{Base: base, Token: token, Tick: 20 * time.Millisecond, Work: 10 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	v, viewID := view(t, ctx, base, h.ViewURL())

	if err := v.Send(ctx, "snapshotRequest", map[string]any{"lastHostSequence": nil}, 0); err != nil {
		t.Fatal(err)
	}
	var snap struct {
		At    int64                      `json:"atHostSequence"`
		State map[string]json.RawMessage `json:"state"`
	}
	if err := next(t, ctx, v, "snapshot").Decode(&snap); err != nil || snap.At < 2 || snap.State["projection"] == nil {
		t.Fatalf("snapshot %+v %v", snap, err)
	}
	f1 := next(t, ctx, v, "focusNode")
	f2 := next(t, ctx, v, "focusNode")
	if f2.HostSequence <= f1.HostSequence || string(f1.Payload) == string(f2.Payload) {
		t.Fatalf("focus does not move: %s then %s", f1.Raw, f2.Raw)
	}

	ask := func(typ, id string, extra map[string]any) {
		t.Helper()
		p := map[string]any{"requestId": id, "target": map[string]any{"nodeId": "conv1"}}
		for k, x := range extra {
			p[k] = x
		}
		if err := v.Send(ctx, typ, p, 0); err != nil {
			t.Fatal(err)
		}
	}
	for _, c := range []struct{ ask, want, id string }{
		{"validateRequest", "validateResult", "r1"},
		{"captureInspectRequest", "captureInspectResult", "r2"},
		{"exportRequest", "exportResult", "r3"},
	} {
		ask(c.ask, c.id, nil)
		if m := next(t, ctx, v, c.want); !strings.Contains(string(m.Payload), `"requestId":"`+c.id+`"`) {
			t.Errorf("%s: %s", c.want, m.Raw)
		}
	}
	ask("sourceEditRequest", "r4", map[string]any{"edit": map[string]any{"text": "reject"}})
	if m := next(t, ctx, v, "sourceEditReview"); !strings.Contains(string(m.Payload), `"diff"`) {
		t.Errorf("review %s", m.Raw)
	}
	if m := next(t, ctx, v, "sourceEditResult"); !strings.Contains(string(m.Payload), `"status":"rejected"`) {
		t.Errorf("result %s", m.Raw)
	}
	ask("graphPublishRequest", "r5", map[string]any{"graphGzipBase64": "H4sIAAAAAAAA/wMAAAAAAAAAAAA="})
	for _, phase := range []string{"signing_in", "uploading"} {
		if m := next(t, ctx, v, "graphPublishState"); !strings.Contains(string(m.Payload), `"phase":"`+phase+`"`) {
			t.Errorf("publish state %s, want %s", m.Raw, phase)
		}
	}
	if m := next(t, ctx, v, "graphPublishResult"); !strings.Contains(string(m.Payload), `"status":"published"`) {
		t.Errorf("publish %s", m.Raw)
	}
	ask("candidateRequest", "r6", map[string]any{"viewId": viewID})
	if m := next(t, ctx, v, "candidateResult"); !strings.Contains(string(m.Payload), `"candidates"`) {
		t.Errorf("candidates %s", m.Raw)
	}
}

// TestDemoHostStopsCancelledWork: a view's cancel (or its leaving) stops
// the host's work on that request.
func TestDemoHostStopsCancelledWork(t *testing.T) {
	base := startBroker(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	h, err := Start(ctx, Options{Base: base, Token: token, Work: time.Hour}) // never finishes by itself
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	pending := func() int {
		n := make(chan int)
		h.jobs <- func() { n <- len(h.pending) }
		return <-n
	}
	v, _ := view(t, ctx, base, h.ViewURL())
	target := map[string]any{"nodeId": "conv1"}
	send := func(typ string, p map[string]any) {
		t.Helper()
		if err := v.Send(ctx, typ, p, 0); err != nil {
			t.Fatal(err)
		}
	}
	send("graphPublishRequest", map[string]any{"requestId": "p1", "target": target, "graphGzipBase64": "H4sIAAAAAAAA/wMAAAAAAAAAAAA="})
	next(t, ctx, v, "graphPublishState")
	send("exportRequest", map[string]any{"requestId": "e1", "target": target})
	send("validateRequest", map[string]any{"requestId": "v1", "target": target})
	next(t, ctx, v, "validateResult") // the host has read both requests
	if n := pending(); n != 2 {
		t.Fatalf("%d requests pending, want 2", n)
	}
	send("graphPublishCancel", map[string]any{"requestId": "p1", "target": target})
	send("validateRequest", map[string]any{"requestId": "v2", "target": target})
	next(t, ctx, v, "validateResult")
	if n := pending(); n != 1 {
		t.Fatalf("%d requests pending after a cancel, want 1", n)
	}
	// A view leaving makes the broker cancel its requests for it.
	_ = v.Close()
	testkit.Eventually(t, "the departed view's export to be cancelled", func() bool { return pending() == 0 })
}

// TestLinksAreFreshAndBounded: every link is a new session whose
// credential bootstraps, and past Keep hosts the oldest is closed.
func TestLinksAreFreshAndBounded(t *testing.T) {
	base := startBroker(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	l := NewLinks(Options{Base: base, Token: token, Tick: time.Hour}, 2)
	defer l.Close()
	seen := map[string]bool{}
	for range 3 {
		u, err := l.New(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if seen[u] {
			t.Fatalf("link %d repeats an earlier one", len(seen)+1)
		}
		seen[u] = true
		view(t, ctx, base, u)
	}
	if n := l.Live(); n != 2 {
		t.Errorf("%d hosts live, want 2", n)
	}
	l.Close()
	if _, err := l.New(ctx); err != ErrClosed {
		t.Errorf("New after Close: %v, want ErrClosed", err)
	}
}
