package envclient

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"github.com/coder/websocket"

	"github.com/airlock/airlock/broker/channel/link"
	"github.com/airlock/airlock/broker/internal/frame"
	"github.com/airlock/airlock/executors/wire"
)

// session is one connection to the broker.
type session struct {
	c       *Client
	conn    *websocket.Conn
	out     *link.Writer // every frame to the broker, each within writeTimeout
	calls   *inflight
	act     link.Activity // bytes arriving, for the keepalive
	carried atomic.Bool

	// Calls run on workers that stay for the next call: jobs hands a call
	// to an idle one, idle counts them (at most maxIdle stay), workers
	// tracks them all so the session ends only after its last worker
	// (RATIONALE.md, "Why do an environment's calls run on reused
	// workers?").
	jobs    chan wire.Call
	idle    atomic.Int32
	workers sync.WaitGroup
}

// maxIdle bounds the workers that wait for a next call: a burst of calls
// leaves at most this many goroutines behind.
const maxIdle = 16

// serve says hello, sends the catalog, and then answers calls until the
// connection ends or ctx does (then it drains).
func (s *session) serve(ctx context.Context, grace time.Duration, bearer string) (bool, error) {
	defer s.conn.CloseNow()
	defer s.out.Stop()
	defer s.workers.Wait() // after cancelCalls: an idle worker ends with callCtx
	if err := s.write(wire.HelloFrame(bearer)); err != nil {
		return false, err
	}
	if err := s.sendCatalog(); err != nil {
		return false, err
	}
	callCtx, cancelCalls := context.WithCancel(context.Background())
	defer cancelCalls()
	readErr := make(chan error, 1)
	go func() { readErr <- s.read(callCtx) }()
	confirmed := make(chan struct{})
	go func() { defer close(confirmed); s.confirm(callCtx) }()
	defer func() { <-confirmed }()
	pinged := make(chan struct{})
	go func() { defer close(pinged); link.Keepalive(callCtx, s.conn, &s.act) }()
	defer func() { <-pinged }()
	defer cancelCalls()
	for {
		select {
		case err := <-readErr:
			cancelCalls()
			<-s.calls.drain()
			return s.carried.Load(), s.ended(err)
		case <-s.c.changed:
			if err := s.sendCatalog(); err != nil {
				s.c.opts.Logger.Warn("catalog not sent", "err", err)
			}
		case <-ctx.Done():
			s.drain(grace)
			err := <-readErr
			cancelCalls() // calls still running past the grace are told to stop
			<-s.calls.drain()
			return s.carried.Load(), s.ended(err)
		}
	}
}

// confirm says "connected" once the broker has accepted the hello. The
// channel sends no acknowledgement frame (a seed client expects none), so
// the proof is a pong to a ping sent after the hello: the broker reads its
// frames in order and answers the ping only after it accepted the hello;
// a broker that refused the hello has sent its close and answers no
// ping, so nothing is said but the refusal.
func (s *session) confirm(ctx context.Context) {
	pctx, cancel := context.WithTimeout(ctx, link.PingTimeout)
	defer cancel()
	if s.conn.Ping(pctx) != nil {
		return
	}
	s.c.event(map[string]any{"event": "connected", "broker": s.c.opts.URL})
	s.c.opts.Logger.Info("connected", "broker", s.c.opts.URL)
}

// drain stops taking calls, waits (bounded) for those running, and closes
// the connection normally.
func (s *session) drain(grace time.Duration) {
	s.c.opts.Logger.Info("draining", "grace_ms", grace.Milliseconds())
	t := time.NewTimer(grace)
	defer t.Stop()
	select {
	case <-s.calls.drain():
	case <-t.C:
		s.c.opts.Logger.Warn("drain ended with calls still running")
	}
	_ = s.conn.Close(websocket.StatusNormalClosure, "")
}

// ended reports how the connection ended, and turns the broker's
// "replaced" close into ErrReplaced and its "bearer-refused" close into
// ErrBearerRefused.
func (s *session) ended(err error) error {
	var ce websocket.CloseError
	code, reason := -1, ""
	if errors.As(err, &ce) {
		code, reason = int(ce.Code), ce.Reason
	}
	s.c.event(map[string]any{"event": "disconnected", "code": code, "reason": reason})
	s.c.opts.Logger.Info("disconnected", "code", code, "reason", reason)
	switch reason {
	case link.ReasonEnvironmentReplaced:
		return ErrReplaced
	case link.ReasonBearerRefused:
		return ErrBearerRefused
	}
	return err
}

// read dispatches each call frame; it returns the error that ended the
// connection. A binary or oversized frame is dropped and the connection
// goes on, as the broker does with its peers' frames: it cannot be a call,
// and its callId could only be read by buffering it whole.
func (s *session) read(ctx context.Context) error {
	for {
		data, err := s.act.ReadFrame(s.conn, maxCallFrame)
		switch {
		case errors.Is(err, frame.ErrDiscarded):
			s.c.opts.Logger.Warn("call frame dropped", "reason", "binary or oversized")
		case err != nil:
			return err
		default:
			s.dispatch(ctx, data)
		}
	}
}

// dispatch answers one frame. A frame that is not a valid call is refused
// (or dropped) by the executor door at once; a valid one runs on a worker
// (an idle one, else a new one) unless the environment is draining or
// full.
func (s *session) dispatch(ctx context.Context, data []byte) {
	c, err := wire.ParseCall(data)
	if err != nil {
		if out := s.c.door.Handle(ctx, data); out != nil {
			s.answer(out)
		}
		return
	}
	if rule := s.calls.enter(); rule != "" {
		s.answer(wire.AnswerFrame(wire.Refuse(c.CallID, rule, nil)))
		return
	}
	s.carried.Store(true)
	select {
	case s.jobs <- c: // an idle worker took it
	default:
		s.workers.Add(1)
		go s.work(ctx, c)
	}
}

// work answers c, then waits for the next call dispatch hands it, unless
// maxIdle workers already wait or the session's calls are over (ctx).
func (s *session) work(ctx context.Context, c wire.Call) {
	defer s.workers.Done()
	for {
		buf := link.Buffer()
		frame := s.c.door.AppendFrame(ctx, *buf, c)
		s.answer(frame)
		link.Release(buf, frame)
		s.calls.leave()
		if s.idle.Add(1) > maxIdle {
			s.idle.Add(-1)
			return
		}
		select {
		case c = <-s.jobs:
			s.idle.Add(-1)
		case <-ctx.Done():
			s.idle.Add(-1)
			return
		}
	}
}

func (s *session) answer(frame []byte) {
	if err := s.write(frame); err != nil {
		s.c.opts.Logger.Debug("answer not sent: connection gone", "err", err)
	}
}

func (s *session) sendCatalog() error {
	ds := s.c.opts.Catalog()
	if err := s.write(wire.CatalogFrame(ds)); err != nil {
		return err
	}
	s.c.opts.Logger.Info("catalog sent", "descriptors", len(ds))
	return nil
}

// write sends one frame; a write still in flight after writeTimeout cuts
// the connection (link.Writer).
func (s *session) write(frame []byte) error { return s.out.Write(frame, writeTimeout) }
