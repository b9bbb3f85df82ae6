package main

import (
	"bufio"
	"fmt"
	"net/http"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/airlock/airlock/broker/localclient"
)

// End-to-end tests of the relay's memory and fairness bounds (issue 7):
// outbound queues bounded in bytes as well as messages, view traffic that
// cannot push the host out, and the per-view bound on requests in flight.

// rssCeiling is the most the broker may hold at its peak (VmHWM) while a
// view that never reads is sent 64 × 4 MiB frames with the default 32 MiB
// queue bound. Without the byte bound the queue keeps every frame (over
// 256 MiB); with it the broker measured about 120 MiB without -race and
// about 170 MiB with it (race shadow memory included).
func rssCeiling() int64 {
	if raceEnabled {
		return 250 << 20
	}
	return 200 << 20
}

// peakRSS reads the broker's peak resident set (VmHWM) from /proc.
func (p *proc) peakRSS(t *testing.T) int64 {
	t.Helper()
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", p.cmd.Process.Pid))
	if err != nil {
		t.Skipf("no /proc: %v", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), "VmHWM:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), 10, 64)
			if err != nil {
				t.Fatalf("VmHWM %q: %v", rest, err)
			}
			return kb << 10
		}
	}
	t.Fatal("no VmHWM in /proc status")
	return 0
}

// stalledView connects a view that reads (almost) nothing: its client
// buffers one message, then stops taking frames off the socket.
func (s *session) stalledView(t *testing.T) (*sock, string) {
	t.Helper()
	v := s.p.dial(t, "stalled view", localclient.DialOptions{Origin: s.m.LaunchOrigin, SessionID: s.m.WorkspaceSessionID,
		Cookies: []*http.Cookie{s.ck}, Inbox: 1})
	if _, err := v.Hello(tctx(t)); err != nil {
		t.Fatal(err)
	}
	id, _ := payload(s.host.expect("viewState"))["viewId"].(string)
	return v, id
}

func TestRelayFloodViewNeverReads(t *testing.T) {
	p := startSessions(t)
	s := connect(t, p, 1, localclient.MintOptions{})
	fast := s.views[0]
	stalled, stalledID := s.stalledView(t)
	chunk := strings.Repeat("z", 4<<20)
	const n = 64
	// The host sends each frame once the fast view has it, so the fast
	// view is never more than one frame behind however loaded the
	// machine, while the stalled view's queue fills.
	for i := range n {
		s.host.send("focusNode", map[string]any{"chunk": chunk}, int64(i+1))
		if m, err := fast.Receive(tctx(t)); err != nil || m.Type != "focusNode" {
			t.Fatalf("the fast view stalled after %d frames: %v", i, err)
		}
	}
	peak := p.peakRSS(t)
	t.Logf("broker peak RSS (VmHWM) %d MiB after %d × 4 MiB frames; ceiling %d MiB", peak>>20, n, rssCeiling()>>20)
	if peak > rssCeiling() {
		t.Fatalf("broker peak RSS %d MiB over the %d MiB ceiling: the stalled view's queue is not bounded in bytes", peak>>20, rssCeiling()>>20)
	}
	vs := payload(s.host.expect("viewState"))
	if vs["viewId"] != stalledID || vs["state"] != "disconnected" {
		t.Fatalf("host told %v, want %s disconnected", vs, stalledID)
	}
	if v := p.metric(t, "airlock_relay_dropped_views_total"); v != 1 {
		t.Fatalf("dropped views %v", v)
	}
	// Reading again, the stalled view gets what the socket buffers held,
	// then the end: 1013 slow-consumer when the close frame got through,
	// a cut connection when its writer was stuck mid-frame.
	for {
		_, err := stalled.Receive(tctx(t))
		if err == nil {
			continue
		}
		if code, reason := localclient.CloseStatus(err); code != -1 && (code != 1013 || reason != "slow-consumer") {
			t.Fatalf("stalled view closed %d %q, want 1013 slow-consumer", code, reason)
		}
		if !isClose(err) {
			t.Fatalf("the stalled view's socket was not closed: %v", err)
		}
		break
	}
	barrier(t, s.host, fast)
	barrier(t, fast, s.host)
}

// validate is a validateRequest payload with a target of pad bytes.
func validate(id string, pad int) map[string]any {
	return req(id, map[string]any{"node": id, "pad": strings.Repeat("p", pad)}, nil)
}

// sentinel makes a view's next refusal a known one: a cancel of a request
// nobody made. The broker handles a socket's frames in order, so every
// answer to what the view sent before comes first.
func sentinel(v *sock) {
	v.send("validateCancel", req("sentinel", map[string]any{}, nil), 0)
}

// refusalsUntilSentinel collects the view's messages up to the sentinel's
// refusal.
func refusalsUntilSentinel(t *testing.T, v *sock) (busy []string) {
	t.Helper()
	for {
		m := v.next()
		pe := m.Error()
		switch {
		case pe != nil && pe.Detail == "unknown-request" && pe.RequestID == "sentinel":
			return busy
		case pe != nil && pe.Code == "INVALID_MESSAGE" && pe.Detail == "busy":
			busy = append(busy, pe.RequestID)
		default:
			t.Fatalf("%s: got %s during the flood", v.name, m.Raw)
		}
	}
}

func TestRelayFloodHostNotReading(t *testing.T) {
	p := startSessions(t, "AIRLOCK_LOCAL_OUTBOUND_QUEUE=32")
	s := &session{p: p, m: p.mintFor(t, localclient.MintOptions{})}
	s.ck = p.bootstrap(t, s.m)
	// The host buffers one message and reads nothing more until the
	// flood is over.
	s.host = p.dial(t, "host", localclient.DialOptions{Origin: s.m.LaunchOrigin, SessionID: s.m.WorkspaceSessionID,
		Cookies: []*http.Cookie{s.hostCookie()}, Inbox: 1})
	if _, err := s.host.Hello(tctx(t)); err != nil {
		t.Fatal(err)
	}
	v, c := p.view(t, s.m, s.ck)
	const n, pad = 160, 256 << 10
	for i := range n {
		v.send("validateRequest", validate(fmt.Sprintf("r%d", i), pad), 0)
	}
	sentinel(v)
	busy := refusalsUntilSentinel(t, v)
	if len(busy) == 0 {
		t.Fatalf("%d requests of %d KiB at a host that reads nothing: none refused busy", n, pad>>10)
	}
	t.Logf("%d of %d requests refused busy", len(busy), n)
	refused := map[string]bool{}
	for _, id := range busy {
		refused[id] = true
	}
	// The host reads again: it is still connected and gets exactly the
	// requests that were not refused, in order.
	if vs := payload(s.host.expect("viewState")); vs["viewId"] != c.ViewID || vs["state"] != "connected" {
		t.Fatalf("host told %v", vs)
	}
	var first string
	for i := range n {
		id := fmt.Sprintf("r%d", i)
		if refused[id] {
			continue
		}
		if got := payload(s.host.expect("validateRequest"))["requestId"]; got != id {
			t.Fatalf("host got request %v, want %s", got, id)
		}
		if first == "" {
			first = id
		}
	}
	// And works normally: a result reaches the view, traffic flows both
	// ways, and the view never heard the host go.
	s.host.send("validateResult", req(first, map[string]any{"node": first, "pad": strings.Repeat("p", pad)}, nil), 0)
	if got := payload(v.expect("validateResult"))["requestId"]; got != first {
		t.Fatalf("view got result for %v", got)
	}
	barrier(t, s.host, v)
	barrier(t, v, s.host)
	if got := p.metric(t, "airlock_relay_dropped_views_total"); got != 0 {
		t.Fatalf("dropped views %v", got)
	}
}

func TestRelayFloodInFlightBound(t *testing.T) {
	p := startSessions(t)
	s := connect(t, p, 2, localclient.MintOptions{})
	v, other, host := s.views[0], s.views[1], s.host
	const bound = 64
	for i := range bound {
		v.send("validateRequest", validate(fmt.Sprintf("q%d", i), 8), 0)
	}
	for i := range bound {
		if got := payload(host.expect("validateRequest"))["requestId"]; got != fmt.Sprintf("q%d", i) {
			t.Fatalf("request %d of %d: host got %v", i+1, bound, got)
		}
	}
	// The 65th is refused busy and never reaches the host; the 64 before
	// it drew no refusal (the sentinel's is the view's next message).
	over := fmt.Sprintf("q%d", bound)
	v.send("validateRequest", validate(over, 8), 0)
	sentinel(v)
	if busy := refusalsUntilSentinel(t, v); len(busy) != 1 || busy[0] != over {
		t.Fatalf("busy refusals %v, want exactly [%s]", busy, over)
	}
	barrier(t, v, host)
	// The bound is per view: another view's request goes through.
	other.send("validateRequest", validate("o1", 8), 0)
	if got := payload(host.expect("validateRequest"))["requestId"]; got != "o1" {
		t.Fatalf("host got %v", got)
	}
	// A result frees a slot: the refused request, sent again, goes through.
	host.send("validateResult", req("q0", map[string]any{"node": "q0", "pad": strings.Repeat("p", 8)}, nil), 0)
	v.expect("validateResult")
	v.send("validateRequest", validate(over, 8), 0)
	if got := payload(host.expect("validateRequest"))["requestId"]; got != over {
		t.Fatalf("host got %v", got)
	}
	barrier(t, host, v, other)
}
