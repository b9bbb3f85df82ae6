package e2e

import (
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/coder/websocket"

	"github.com/airlock/airlock/broker/contract"
	"github.com/airlock/airlock/broker/localclient"
	"github.com/airlock/airlock/executors/testkit"
)

// End-to-end test of the relay's promise that view traffic can never push
// the host out, against the broker-made frames views cause: the viewState
// of each join and leave, and the cancels synthesized for a leaving
// view's requests. A view fills its share of a host's queue, then churns
// views; the host must stay.

// churnScenario is the attack's size: floods acks of ackBytes at the
// host's queue (settings env), then churns views. Without -race: the
// reported attack, 60 acks of 1 MiB at the default 32 MiB queue, and a
// ceiling on the broker's peak RSS (VmHWM). With -race, JSON work on
// 1 MiB frames is slow enough on a loaded machine that the host's socket
// would hit its 30 s write timeout while it is not reading, so the queue
// is 4 MiB and the acks 128 KiB (the same proportions), and the memory
// ceiling is left to the build without it (shadow memory, see
// floodScenario).
type churnScenario struct {
	env      []string
	ackBytes int
	ceiling  int64
}

func churnSize() churnScenario {
	if raceEnabled {
		return churnScenario{env: []string{"AIRLOCK_LOCAL_MAX_FRAME_BYTES=4194304", "AIRLOCK_LOCAL_OUTBOUND_QUEUE_BYTES=4194304"}, ackBytes: 128 << 10}
	}
	return churnScenario{ackBytes: 1 << 20, ceiling: 200 << 20}
}

// churnView opens a view socket with the view cookie, says hello, reads
// its first frame (connected, or the close of a refused join) and closes.
// It reports whether the view was let in. A refused join is closed 1013
// host-busy with nothing before the close, not even an error frame
// (PROTOCOL sections 4.3 and 4.4).
func (s *session) churnView(t *testing.T) bool {
	t.Helper()
	h := http.Header{}
	h.Set("Origin", s.m.LaunchOrigin)
	h.Set("Cookie", s.ck.Name+"="+s.ck.Value)
	ws, _, err := websocket.Dial(tctx(t), localclient.WSURL(s.p.URL()), &websocket.DialOptions{HTTPHeader: h, Subprotocols: contract.ViewSubprotocols(s.pass.Key)})
	if err != nil {
		t.Fatalf("churn view: dial: %v", err)
	}
	defer ws.CloseNow()
	if err := ws.Write(tctx(t), websocket.MessageText, localclient.Envelope(s.m.WorkspaceSessionID, "hello", map[string]any{}, 0)); err != nil {
		t.Fatalf("churn view: hello: %v", err)
	}
	_, b, err := ws.Read(tctx(t))
	if err == nil {
		if !strings.Contains(string(b), `"type":"connected"`) {
			t.Fatalf("churn view: got %.200s", b)
		}
		return true
	}
	var ce websocket.CloseError
	if !errors.As(err, &ce) || ce.Code != websocket.StatusTryAgainLater || ce.Reason != "host-busy" {
		t.Fatalf("churn view: refused with %v, want 1013 host-busy", err)
	}
	return false
}

// hostReadsTo reads the host's messages, in the background, up to an
// ack carrying mark, skipping what views caused while it was not reading
// (viewState, the flood's acks, synthesized cancels). It reports how many
// it skipped, or the error that ended the host's socket first.
func hostReadsTo(host *sock, mark string) <-chan error {
	done := make(chan error, 1)
	go func() {
		for {
			m, err := host.Receive(tctx(host.t))
			if err != nil {
				done <- err
				return
			}
			if m.Type == "ack" && payload(m)["mark"] == mark {
				done <- nil
				return
			}
		}
	}()
	return done
}

func TestRelayViewChurnNeverDropsHost(t *testing.T) {
	t.Parallel()
	sc := churnSize()
	p := startSessions(t, sc.env...)
	// The host reads nothing more until the attack is over (a busy extension).
	s := stalledHostSession(t, p)
	v, _ := p.view(t, s.m, s.pass)
	// The view fills its share of the host's queue with big acks; the
	// sentinel's refusal comes after every answer to them.
	const floods, churns = 60, 140
	ack := fmt.Appendf(nil, `{"protocolVersion":1,"workspaceSessionId":%q,"type":"ack","payload":{"blob":"%s"}}`,
		s.m.WorkspaceSessionID, strings.Repeat("x", sc.ackBytes))
	for range floods {
		v.sendRaw(ack)
	}
	sentinel(v)
	busy := refusalsUntilSentinel(t, v)
	if len(busy) == 0 {
		t.Fatalf("%d acks of %d KiB at a host that reads nothing: none refused busy, the share never filled", floods, sc.ackBytes>>10)
	}
	t.Logf("%d of %d acks refused busy", len(busy), floods)
	// Then it churns views with the same cookie.
	joined := 0
	for range churns {
		if s.churnView(t) {
			joined++
		}
	}
	t.Logf("%d of %d churned views joined", joined, churns)
	// Each join's viewState and each leave's take a message of the views'
	// half of the host's queue (128): churning 140 views cannot all fit.
	if joined == churns {
		t.Fatalf("all %d churned views joined a host that reads nothing", churns)
	}
	if n := p.metric(t, `airlock_relay_host_busy_total{outcome="join-refused"}`); n != float64(churns-joined) {
		t.Errorf("joins refused counted %v, want %d", n, churns-joined)
	}
	// Every churned view has left the hub (the gauge falls after Leave).
	testkit.Eventually(t, "churned views gone", func() bool {
		return p.metric(t, `airlock_ws_connections{endpoint="ws",role="view"}`) == 1
	})
	// The host reads again: it is still connected and relays both ways.
	// The view's mark is refused busy until the host has read enough.
	read := hostReadsTo(s.host, "from-view")
	testkit.Eventually(t, "the view's mark reaches the host's queue", func() bool {
		v.send("ack", map[string]any{"mark": "from-view"}, 0)
		sentinel(v)
		return len(refusalsUntilSentinel(t, v)) == 0
	})
	if err := <-read; err != nil {
		t.Fatalf("host: %v", err)
	}
	s.host.send("ack", map[string]any{"mark": "from-host"}, 0)
	if m := v.expect("ack"); payload(m)["mark"] != "from-host" {
		t.Fatalf("view got %s", m.Raw)
	}
	barrier(t, s.host, v)
	barrier(t, v, s.host)
	if got := p.metric(t, "airlock_relay_dropped_hosts_total"); got != 0 {
		t.Fatalf("dropped hosts %v", got)
	}
	if ceiling := sc.ceiling; ceiling > 0 {
		if peak := p.peakRSS(t); peak > ceiling {
			t.Fatalf("broker peak RSS %d MiB over the %d MiB ceiling", peak>>20, ceiling>>20)
		}
	}
}

// TestRelayLeavingNoticesPastHostByteBoundAreDropped: PROTOCOL section
// 4.6. A view fills its half of a host's queue with requests whose
// targets are big, then leaves: the broker owes the host a cancel of
// each (as big as its target) and the view's viewState, within the
// queue's byte bound. Those that do not fit are not sent and are counted
// notice-dropped; the host stays, and hears exactly the others.
func TestRelayLeavingNoticesPastHostByteBoundAreDropped(t *testing.T) {
	t.Parallel()
	// A 1 MiB host queue: views may fill 512 KiB of it, and the cancels
	// of 200 KiB targets overflow the rest within a few.
	p := startSessions(t, "AIRLOCK_LOCAL_MAX_FRAME_BYTES=1048576", "AIRLOCK_LOCAL_OUTBOUND_QUEUE_BYTES=1048576",
		"AIRLOCK_LOCAL_MAX_REQUESTS_PER_VIEW=1000")
	// The host reads nothing more until the view has left.
	s := stalledHostSession(t, p)
	witness, _ := p.view(t, s.m, s.pass) // stays, to reach the host afterwards
	leaving, c := p.view(t, s.m, s.pass)
	pad := strings.Repeat("p", 200<<10)
	var inFlight int
	for i := 0; ; i++ {
		if i == 1000 {
			t.Fatal("1000 requests of 200 KiB at a host that reads nothing: none refused busy")
		}
		leaving.sendRaw(requestFrame(s.m.WorkspaceSessionID, fmt.Sprintf("r%d", i), pad))
		sentinel(leaving)
		if len(refusalsUntilSentinel(t, leaving)) > 0 {
			break
		}
		inFlight++
	}
	_ = leaving.Close()
	testkit.Eventually(t, "the view has left", func() bool {
		return p.metric(t, `airlock_ws_connections{endpoint="ws",role="view"}`) == 1
	})
	dropped := p.metric(t, `airlock_relay_host_busy_total{outcome="notice-dropped"}`)
	if dropped < 1 {
		t.Fatalf("%d cancels of 200 KiB past a host's full queue: none dropped", inFlight)
	}
	// The host reads again, up to a mark the witness sends once the
	// views' half of its queue has room.
	type heard struct{ cancels, left int }
	got := make(chan heard, 1)
	go func() {
		var h heard
		defer func() { got <- h }()
		for {
			m, err := s.host.Receive(tctx(t))
			if err != nil {
				h.cancels = -1
				return
			}
			pl := payload(m)
			switch {
			case m.Type == "validateCancel" && pl["reason"] == "view-disconnected":
				h.cancels++
			case m.Type == "viewState" && pl["viewId"] == c.ViewID && pl["state"] == "disconnected":
				h.left++
			case m.Type == "ack" && pl["mark"] == "after":
				return
			}
		}
	}()
	testkit.Eventually(t, "the witness's mark reaches the host's queue", func() bool {
		witness.send("ack", map[string]any{"mark": "after"}, 0)
		sentinel(witness)
		return len(refusalsUntilSentinel(t, witness)) == 0
	})
	h := <-got
	if h.cancels < 0 {
		t.Fatal("the host's socket ended")
	}
	t.Logf("%d requests in flight: the host heard %d cancels and %d viewState, %v notices dropped", inFlight, h.cancels, h.left, dropped)
	if h.left > 1 || h.cancels+h.left+int(dropped) != inFlight+1 {
		t.Errorf("owed %d cancels and 1 viewState: heard %d and %d, dropped %v", inFlight, h.cancels, h.left, dropped)
	}
	barrier(t, s.host, witness)
	if n := p.metric(t, "airlock_relay_dropped_hosts_total"); n != 0 {
		t.Errorf("dropped hosts %v", n)
	}
}
