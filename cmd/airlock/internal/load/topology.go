package load

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/airlock/airlock/broker/localclient"
)

// RelayWindow is how many messages a host may be ahead of its slowest
// view: well under the broker's (and the bare forwarder's) 256-frame view
// queue, so the load measures relaying, not slow-consumer drops.
const RelayWindow = 32

// drainTimeout bounds the wait, after a turn, for views to receive what
// their host sent.
const drainTimeout = 10 * time.Second

// topology is one side of `load relay`: sessions, each a host and its
// views, connected for the whole run. In a turn every host sends ordered
// focusNode states stamped with the time of sending, as fast as its views
// keep up; views measure each delivery against the one clock of this
// process.
type topology struct {
	sessions  []*relaySession
	epoch     time.Time // the origin of the stamps; monotonic
	frameSize int
	rate      int // host messages a second per session; 0: as fast as the window lets (see rate.go)
	meter     *meter
	index     int // the side's index in meter
	measuring atomic.Bool
	closing   atomic.Bool
	closeOnce sync.Once
	loops     sync.WaitGroup // every receive loop
}

type relaySession struct {
	host     *localclient.Conn
	pad      string
	views    []*relayView
	notify   chan struct{} // a view received something
	seq      int64         // the last hostSequence sent
	sent     int64         // messages sent in measured turns
	sendErr  error
	refusals int64 // error messages to the host
}

type relayView struct {
	conn     *localclient.Conn
	got      atomic.Int64 // the last hostSequence received
	done     chan struct{}
	lat      histogram
	refusals int64
	early    bool  // the socket closed before the run ended
	closeErr error // why the receive loop ended
}

// focus is the payload the host sends: t is nanoseconds since the
// topology's epoch.
type focus struct {
	NodeID string `json:"nodeId"`
	T      int64  `json:"t"`
	Pad    string `json:"pad"`
}

func newTopology(frameSize int, m *meter, index int) *topology {
	return &topology{epoch: time.Now(), frameSize: frameSize, meter: m, index: index}
}

func (t *topology) now() int64 { return int64(time.Since(t.epoch)) }

// addSession adds a host that has said hello and starts reading its
// socket (the broker's notices to the host must be read, or it would be
// dropped as a slow consumer).
func (t *topology) addSession(host *localclient.Conn, sessionID string) *relaySession {
	s := &relaySession{host: host, pad: padFor(sessionID, t.frameSize), notify: make(chan struct{}, 1)}
	t.sessions = append(t.sessions, s)
	t.loops.Add(1)
	go func() {
		defer t.loops.Done()
		for {
			m, err := host.Receive(context.Background())
			if err != nil {
				return
			}
			if m.Type == "error" {
				s.refusals++
			}
		}
	}()
	return s
}

// addView adds a connected view to s and starts its receive loop.
func (t *topology) addView(s *relaySession, conn *localclient.Conn) {
	v := &relayView{conn: conn, done: make(chan struct{})}
	s.views = append(s.views, v)
	t.loops.Add(1)
	go func() {
		defer t.loops.Done()
		v.loop(t, s)
	}()
}

// padFor is the pad that makes a focusNode frame of sessionID about size
// bytes long (never less than the envelope itself).
func padFor(sessionID string, size int) string {
	frame := localclient.Envelope(sessionID, "focusNode", focus{NodeID: "layer-7", T: 1e10}, 1e5)
	return strings.Repeat("x", max(size-len(frame), 0))
}

func (v *relayView) loop(t *topology, s *relaySession) {
	defer close(v.done)
	for {
		m, err := v.conn.Receive(context.Background())
		now := t.now()
		if err != nil {
			v.closeErr, v.early = err, !t.closing.Load()
			return
		}
		switch m.Type {
		case "focusNode":
			v.delivered(t, m, now)
			select {
			case s.notify <- struct{}{}:
			default:
			}
		case "error":
			v.refusals++
		}
	}
}

// delivered records one delivery's latency while the side is measured.
func (v *relayView) delivered(t *topology, m *localclient.Message, now int64) {
	if t.measuring.Load() {
		var p focus
		if json.Unmarshal(m.Payload, &p) == nil && p.T > 0 {
			v.lat.record(time.Duration(now - p.T))
			t.meter.add(t.index, 1)
		}
	}
	v.got.Store(m.HostSequence)
}

// run is one turn: every host sends until until, then the views catch
// up before the other side's turn.
func (t *topology) run(ctx context.Context, until time.Time, measure bool) {
	t.measuring.Store(measure)
	stop := make(chan struct{})
	var senders sync.WaitGroup
	t.startSenders(ctx, &senders, until, stop, measure)
	timer := time.NewTimer(time.Until(until))
	select {
	case <-timer.C:
	case <-ctx.Done():
		timer.Stop()
	}
	t.measuring.Store(false)
	close(stop)
	senders.Wait()
	drained := make(chan struct{})
	deadline := time.AfterFunc(drainTimeout, func() { close(drained) })
	defer deadline.Stop()
	for _, s := range t.sessions {
		if ctx.Err() == nil {
			s.waitViews(s.seq, drained)
		}
	}
}

// send sends ordered states while every view is within RelayWindow.
func (s *relaySession) send(ctx context.Context, t *topology, stop <-chan struct{}, measure bool) {
	for s.sendErr == nil {
		select {
		case <-stop:
			return
		default:
		}
		if !s.waitViews(s.seq+1-RelayWindow, stop) {
			return
		}
		s.sendNext(ctx, t, measure)
	}
}

// sendNext sends the next ordered state, stamped now, and counts it
// when measured.
func (s *relaySession) sendNext(ctx context.Context, t *topology, measure bool) {
	s.seq++
	if s.sendErr = s.host.Send(ctx, "focusNode", focus{NodeID: "layer-7", T: t.now(), Pad: s.pad}, s.seq); s.sendErr == nil && measure {
		s.sent++
	}
}

// waitViews waits until every open view has received seq, or stop.
func (s *relaySession) waitViews(seq int64, stop <-chan struct{}) bool {
	for _, v := range s.views {
	view:
		for v.got.Load() < seq {
			select {
			case <-s.notify:
			case <-v.done:
				break view
			case <-stop:
				return false
			}
		}
	}
	return true
}

// close closes every socket and waits for the receive loops; it may be
// called again.
func (t *topology) close() { t.closeOnce.Do(t.closeAll) }

func (t *topology) closeAll() {
	t.closing.Store(true)
	var wg sync.WaitGroup
	for _, s := range t.sessions {
		for _, v := range s.views {
			wg.Go(func() { _ = v.conn.Close() })
		}
	}
	wg.Wait()
	for _, s := range t.sessions {
		wg.Go(func() { _ = s.host.Close() })
	}
	wg.Wait()
	t.loops.Wait()
}

// figures sums the views' and hosts' counts after close.
func (t *topology) figures(label string, measured time.Duration) RelayFigures {
	var all histogram
	f := RelayFigures{Label: label}
	for _, s := range t.sessions {
		f.MessagesSent += s.sent
		f.Refusals += s.refusals
		if s.sendErr != nil {
			f.SendErrors++
			if f.FirstError == "" {
				f.FirstError = s.sendErr.Error()
			}
		}
		for _, v := range s.views {
			all.merge(&v.lat)
			f.Refusals += v.refusals
			f.countClose(v)
		}
	}
	f.Deliveries, f.Seconds = int64(all.n), measured.Seconds()
	f.DeliveriesPerSecond, f.LatencyMs = rate(f.Deliveries, measured), summarize(&all)
	return f
}

// countClose counts a view the other end closed during the run: a
// dropped view, by close code and reason (1013 slow-consumer is the
// broker's).
func (f *RelayFigures) countClose(v *relayView) {
	if !v.early {
		return
	}
	f.DroppedViews++
	if f.Closes == nil {
		f.Closes = map[string]int{}
	}
	code, reason := localclient.CloseStatus(v.closeErr)
	f.Closes[fmt.Sprintf("%d %s", code, reason)]++
}

// RelayFigures are one side's figures in the report.
type RelayFigures struct {
	Label               string         `json:"label"`
	MessagesSent        int64          `json:"messagesSent"`
	Deliveries          int64          `json:"deliveries"`
	Seconds             float64        `json:"seconds"`
	DeliveriesPerSecond float64        `json:"deliveriesPerSecond"`
	LatencyMs           LatencySummary `json:"latencyMs"`
	DroppedViews        int            `json:"droppedViews"`
	Closes              map[string]int `json:"closes,omitempty"`
	Refusals            int64          `json:"refusals"`
	SendErrors          int64          `json:"sendErrors"`
	FirstError          string         `json:"firstError,omitempty"`
}
