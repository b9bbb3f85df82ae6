// Package envclient is the environment's side of the executor channel:
// what `airlock env` runs. It connects to a broker's /channel without an
// Origin, says hello with its bearer, advertises its catalog, answers the
// calls it is sent through its own executors, re-advertises when its
// plugins change, reconnects with jittered backoff when the broker goes
// away, and drains on shutdown.
package envclient

import (
	"context"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/coder/websocket"

	"github.com/airlock/airlock/broker/channel/link"
	"github.com/airlock/airlock/executors/wire"
)

// Timing of the client. The backoff starts at backoffBase and doubles up
// to Options.BackoffMax; it starts over once a connection has stayed up
// for stableAfter or carried a call.
const (
	backoffBase  = 100 * time.Millisecond
	stableAfter  = 5 * time.Second
	dialTimeout  = 10 * time.Second
	writeTimeout = 30 * time.Second
	// maxCallFrame bounds a frame from the broker: a call body is capped at
	// 16 MiB by POST /v1/calls. A larger frame is dropped as it streams in
	// (frame.Read, through link.Activity), never buffered whole.
	maxCallFrame = 16<<20 + 4096
)

// Options configure a Client.
type Options struct {
	// URL is the broker's channel: ws://HOST:PORT/channel.
	URL string
	// Bearer returns the bearer; it is asked before every connection, so
	// a bearer file replaced on disk is picked up on the next attempt.
	Bearer func() (string, error)
	// Executor answers calls (executors.Table).
	Executor wire.Executor
	// Catalog lists the admitted descriptors (executors.Table.Descriptors).
	Catalog func() []wire.Descriptor
	// BackoffMax caps the wait between connection attempts.
	BackoffMax time.Duration
	// MaxInflight bounds calls running at once; past it calls are
	// answered overloaded. Zero means 1024.
	MaxInflight int
	// Logger receives JSON logs; Events, when set, one JSON line per
	// connection and disconnection (`airlock env` prints them on stdout).
	Logger *slog.Logger
	Events io.Writer
}

// Client is one environment's connection to its broker.
type Client struct {
	opts    Options
	door    *link.Door
	changed chan struct{} // a new catalog is to be sent
	evMu    sync.Mutex
}

// New builds a client; Run starts it.
func New(o Options) (*Client, error) {
	if o.URL == "" || o.Bearer == nil || o.Executor == nil || o.Catalog == nil {
		return nil, ErrOptions
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.BackoffMax < backoffBase {
		o.BackoffMax = backoffBase
	}
	if o.MaxInflight <= 0 {
		o.MaxInflight = 1024
	}
	return &Client{opts: o, door: link.NewDoor(o.Executor, o.Logger),
		changed: make(chan struct{}, 1)}, nil
}

// CatalogChanged asks the client to send its catalog again (hook it to
// the plugin catalog's OnChange). It never blocks.
func (c *Client) CatalogChanged() {
	select {
	case c.changed <- struct{}{}:
	default:
	}
}

// Run connects and serves until ctx is done, reconnecting with jittered
// exponential backoff. When ctx ends it drains: calls that arrive are
// answered shutting-down, calls running finish (for at most grace), then
// the connection is closed 1000. It returns nil after a drain,
// ErrReplaced when the broker preferred another connection, and
// ErrBearerRefused when the broker refused a bearer that has not changed.
func (c *Client) Run(ctx context.Context, grace time.Duration) error {
	for attempt := 1; ; attempt++ {
		start := time.Now()
		carried, err := c.once(ctx, grace, attempt)
		switch {
		case errors.Is(err, ErrReplaced), errors.Is(err, ErrBearerRefused):
			return err
		case ctx.Err() != nil:
			return nil
		case carried || time.Since(start) >= stableAfter:
			attempt = 1
		}
		wait := c.backoff(attempt)
		c.opts.Logger.Info("reconnecting", "attempt", attempt, "in_ms", wait.Milliseconds(), "err", errText(err))
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil
		case <-t.C:
		}
	}
}

// backoff is the wait before attempt+1: full-jitter in the upper half of
// an exponentially growing window, capped.
func (c *Client) backoff(attempt int) time.Duration {
	d := c.opts.BackoffMax
	if attempt < 30 {
		d = min(backoffBase<<(attempt-1), c.opts.BackoffMax)
	}
	return d/2 + rand.N(d/2+1)
}

// once makes one connection and serves it to its end. carried reports
// whether it answered at least one call.
func (c *Client) once(ctx context.Context, grace time.Duration, attempt int) (carried bool, err error) {
	bearer, err := c.opts.Bearer()
	if err != nil {
		return false, fmt.Errorf("envclient: bearer: %w", err)
	}
	c.opts.Logger.Info("connecting", "broker", c.opts.URL, "attempt", attempt)
	dctx, cancel := context.WithTimeout(ctx, dialTimeout)
	conn, _, err := websocket.Dial(dctx, c.opts.URL, nil)
	cancel()
	if err != nil {
		return false, fmt.Errorf("envclient: dial: %w", err)
	}
	s := &session{c: c, conn: conn, out: link.NewWriter(conn), calls: &inflight{max: c.opts.MaxInflight},
		jobs: make(chan wire.Call)}
	carried, err = s.serve(ctx, grace, bearer)
	if errors.Is(err, ErrBearerRefused) && c.bearerChanged(bearer) {
		c.opts.Logger.Warn("bearer refused; the bearer was replaced since, so trying the new one")
		err = fmt.Errorf("envclient: the broker refused the previous bearer")
	}
	return carried, err
}

// bearerChanged reports whether the bearer reads differently now than
// refused did: an operator who paired again and replaced the file before
// the broker closed the old connection is not stopped.
func (c *Client) bearerChanged(refused string) bool {
	now, err := c.opts.Bearer()
	return err == nil && subtle.ConstantTimeCompare([]byte(now), []byte(refused)) == 0
}

// event prints one JSON line on Events.
func (c *Client) event(fields map[string]any) {
	if c.opts.Events == nil {
		return
	}
	line, _ := json.Marshal(fields)
	c.evMu.Lock()
	defer c.evMu.Unlock()
	fmt.Fprintf(c.opts.Events, "%s\n", line)
}

func errText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}
