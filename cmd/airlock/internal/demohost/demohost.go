// Package demohost is the extension host that `airlock demo` plays, so a
// first-time user sees the relay work with nothing else installed: it
// mints a session for the broker's own view page, connects as the host,
// animates host state (a small model graph whose focus moves every second)
// and answers every request family a view can send (PROTOCOL section 4)
// the way an editor extension would, with the non-terminal replies and
// delays that let the page show progress and cancel.
package demohost

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/airlock/airlock/broker/localclient"
)

// Options configure a Host.
type Options struct {
	// Base is the broker's URL (http://127.0.0.1:PORT); the session is
	// minted with it as launch origin, for the broker's own view page.
	Base  string
	Token string
	// Tick is how often the focus moves; 0 means a second.
	Tick time.Duration
	// Work is how long a capture, export, review or upload step takes,
	// so that a view can show it running and cancel it; 0 means 1.5 s.
	Work   time.Duration
	Logger *slog.Logger
}

// Host is the running demo host.
type Host struct {
	o       Options
	minted  *localclient.Minted
	conn    *localclient.Conn
	jobs    chan func()
	stop    chan struct{}
	done    chan struct{}
	stopped sync.Once

	// Owned by run.
	seq     int64
	focus   int
	synced  time.Time
	pending map[string]*time.Timer // by requestId: work not yet answered
}

// Start mints the session, connects as its host and starts animating.
// Close stops it.
func Start(ctx context.Context, o Options) (*Host, error) {
	if o.Tick <= 0 {
		o.Tick = time.Second
	}
	if o.Work <= 0 {
		o.Work = 1500 * time.Millisecond
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	c := &localclient.Client{Base: o.Base, Token: o.Token}
	m, err := c.Mint(ctx, localclient.MintOptions{LaunchOrigin: strings.TrimSuffix(o.Base, "/"), CanProposeSourceEdits: true})
	if err != nil {
		return nil, fmt.Errorf("demo host: %w", err)
	}
	conn, err := localclient.DialHost(ctx, o.Base, m)
	if err != nil {
		return nil, fmt.Errorf("demo host: %w", err)
	}
	if _, err := conn.Hello(ctx); err != nil {
		conn.CloseNow()
		return nil, fmt.Errorf("demo host: %w", err)
	}
	h := &Host{o: o, minted: m, conn: conn, jobs: make(chan func(), 64), stop: make(chan struct{}),
		done: make(chan struct{}), pending: map[string]*time.Timer{}}
	go h.run()
	return h, nil
}

// ViewURL is the view page's URL for the demo session. It holds the
// one-time view credential, so it is printed for the user only.
func (h *Host) ViewURL() string { return h.minted.ViewURL(h.o.Base) }

// Done is closed once the host has stopped (Close, or its socket closed).
func (h *Host) Done() <-chan struct{} { return h.done }

// Close stops the host and closes its socket.
func (h *Host) Close() {
	h.stopped.Do(func() { close(h.stop) })
	<-h.done
}

// model is the graph the demo host shows.
var model = struct {
	file  string
	nodes []string
}{"model.py", []string{"input", "conv1", "relu1", "pool1", "conv2", "relu2", "flatten", "fc1", "softmax"}}

// run owns the host's state and is the only writer of its socket.
func (h *Host) run() {
	defer close(h.done)
	defer h.conn.CloseNow()
	defer h.stopped.Do(func() { close(h.stop) }) // pending timers' jobs give up
	defer func() {
		for _, t := range h.pending {
			t.Stop()
		}
	}()
	in := make(chan *localclient.Message)
	go func() {
		defer close(in)
		for {
			m, err := h.conn.Receive(context.Background())
			if err != nil {
				return
			}
			select {
			case in <- m:
			case <-h.stop:
				return
			}
		}
	}()
	h.send("activeTarget", map[string]any{"file": model.file, "symbol": "Net"}, true)
	h.send("projection", projection(), true)
	tick := time.NewTicker(h.o.Tick)
	defer tick.Stop()
	for {
		select {
		case <-h.stop:
			return
		case <-tick.C:
			h.focus = (h.focus + 1) % len(model.nodes)
			h.send("focusNode", map[string]any{"nodeId": model.nodes[h.focus]}, true)
			if h.focus == 0 {
				h.synced = time.Now().UTC()
				h.send("syncState", map[string]any{"state": "synced", "at": h.synced.Format(time.RFC3339)}, true)
			}
		case job := <-h.jobs:
			job()
		case m, ok := <-in:
			if !ok {
				h.o.Logger.Warn("demo host: the host socket closed")
				return
			}
			h.handle(m)
		}
	}
}

// send sends one message; ordered ones get the next hostSequence.
func (h *Host) send(typ string, payload map[string]any, ordered bool) {
	var seq int64
	if ordered {
		h.seq++
		seq = h.seq
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := h.conn.Send(ctx, typ, payload, seq); err != nil && !errors.Is(err, context.Canceled) {
		h.o.Logger.Warn("demo host: send failed", "type", typ, "err", err)
	}
}

func projection() map[string]any {
	nodes := make([]map[string]any, len(model.nodes))
	edges := make([]map[string]any, 0, len(model.nodes)-1)
	for i, n := range model.nodes {
		nodes[i] = map[string]any{"id": n, "label": n, "line": 10 + 3*i}
		if i > 0 {
			edges = append(edges, map[string]any{"from": model.nodes[i-1], "to": n})
		}
	}
	return map[string]any{"file": model.file, "nodes": nodes, "edges": edges}
}

// state is what a snapshot carries: everything a late view needs.
func (h *Host) state() map[string]any {
	s := map[string]any{
		"activeTarget": map[string]any{"file": model.file, "symbol": "Net"},
		"projection":   projection(),
		"focusNode":    map[string]any{"nodeId": model.nodes[h.focus]},
	}
	if !h.synced.IsZero() {
		s["syncState"] = map[string]any{"state": "synced", "at": h.synced.Format(time.RFC3339)}
	}
	return s
}

// request is the part of a view request the demo host reads.
type request struct {
	RequestID string         `json:"requestId"`
	Target    any            `json:"target"`
	ViewID    string         `json:"viewId"`
	NodeID    string         `json:"nodeId"`
	Edit      map[string]any `json:"edit"`
}

// handle answers one message from a view.
func (h *Host) handle(m *localclient.Message) {
	var r request
	_ = m.Decode(&r)
	reply := func(typ string, extra map[string]any) {
		p := map[string]any{"requestId": r.RequestID, "target": r.Target}
		for k, v := range extra {
			p[k] = v
		}
		h.send(typ, p, false)
	}
	switch m.Type {
	case "snapshotRequest":
		h.send("snapshot", map[string]any{"atHostSequence": h.seq, "state": h.state()}, false)
	case "revealNode":
		for i, n := range model.nodes {
			if n == r.NodeID {
				h.focus = i
				h.send("focusNode", map[string]any{"nodeId": n, "revealed": true}, true)
			}
		}
	case "validateRequest":
		reply("validateResult", map[string]any{"valid": true, "diagnostics": []map[string]any{
			{"severity": "info", "message": fmt.Sprintf("%d layers, shapes consistent", len(model.nodes))}}})
	case "captureInspectRequest":
		h.later(r.RequestID, func() {
			reply("captureInspectResult", map[string]any{"capture": map[string]any{
				"node": model.nodes[h.focus], "shape": []int{1, 64, 28, 28}, "mean": 0.137, "std": 0.981}})
		})
	case "exportRequest":
		h.later(r.RequestID, func() {
			reply("exportResult", map[string]any{"format": "json", "bytes": 2048, "graph": projection()})
		})
	case "sourceEditRequest":
		reply("sourceEditReview", map[string]any{"state": "in-review", "diff": fmt.Sprintf("--- %s\n+++ %s\n@@ -12 +12 @@\n-    self.relu1 = nn.ReLU()\n+    self.relu1 = nn.GELU()\n", model.file, model.file)})
		h.later(r.RequestID, func() {
			// The demo's "user" accepts every proposal but one that asks
			// to be rejected, so both endings can be seen.
			status := "accepted"
			if fmt.Sprint(r.Edit["text"]) == "reject" {
				status = "rejected"
			}
			reply("sourceEditResult", map[string]any{"status": status})
		})
	case "graphPublishRequest":
		reply("graphPublishState", map[string]any{"phase": "signing_in", "connectUrl": "https://example.com/connect"})
		h.later(r.RequestID, func() {
			reply("graphPublishState", map[string]any{"phase": "uploading"})
			h.later(r.RequestID, func() {
				reply("graphPublishResult", map[string]any{"status": "published",
					"graphUrl": "https://example.com/graphs/demo", "shareUrl": "https://example.com/share/demo"})
			})
		})
	case "candidateRequest":
		reply("candidateResult", map[string]any{"viewId": r.ViewID, "candidates": []map[string]any{
			{"nodeId": "relu1", "why": "activation after conv1"}, {"nodeId": "relu2", "why": "activation after conv2"}}})
	case "validateCancel", "captureInspectCancel", "exportCancel", "sourceEditCancel", "graphPublishCancel":
		// The broker settles a cancelled request for the view and drops
		// any later reply; the host only stops the work.
		h.cancel(r.RequestID)
	}
}

// later runs f on the host's goroutine after Work, unless the request is
// cancelled first.
func (h *Host) later(id string, f func()) {
	h.pending[id] = time.AfterFunc(h.o.Work, func() {
		select {
		case h.jobs <- func() {
			if _, ok := h.pending[id]; ok {
				delete(h.pending, id)
				f()
			}
		}:
		case <-h.stop:
		}
	})
}

// cancel forgets the request's pending work.
func (h *Host) cancel(id string) {
	if t, ok := h.pending[id]; ok {
		t.Stop()
		delete(h.pending, id)
	}
}
