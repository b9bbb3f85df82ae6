package e2e

import (
	"bufio"
	"bytes"
	"fmt"
	"net/http"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/coder/websocket"

	"github.com/airlock/airlock/broker/contract"
	"github.com/airlock/airlock/broker/localclient"
)

// End-to-end tests of the relay's memory and fairness bounds:
// outbound queues bounded in bytes as well as messages, view traffic that
// cannot push the host out, and the per-view bound on requests in flight.

// flood is the scenario of TestRelayFloodViewNeverReads: how many 4 MiB
// frames the host sends while a view reads nothing, with which settings,
// and the ceiling on the broker's peak RSS (VmHWM; 0: not asserted).
//
// Without -race: the default 32 MiB queue bound and 64 frames. Without the
// byte bound the stalled view's queue keeps every frame: the broker peaked
// at 483 MiB. With it, at 118 MiB; 200 MiB is the ceiling.
//
// With -race, JSON work on 4 MiB frames takes seconds a frame on a loaded
// machine, so 32 MiB would not fill before the stalled view's writer hits
// its 30 s write timeout (which closes the view too, but not as a slow
// consumer), and the race runtime's shadow memory makes VmHWM follow what
// was ever allocated rather than what is held (over 300 MiB for 24 frames
// with the bound). So the race build uses an 8 MiB bound and fewer frames,
// asserts the drop and leaves the memory ceiling to the build without it.
type flood struct {
	frames  int
	env     []string
	ceiling int64
}

func floodScenario() flood {
	if raceEnabled {
		return flood{frames: 16, env: []string{"AIRLOCK_LOCAL_MAX_FRAME_BYTES=8388608", "AIRLOCK_LOCAL_OUTBOUND_QUEUE_BYTES=8388608"}}
	}
	return flood{frames: 64, ceiling: 200 << 20}
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
		Cookies: []*http.Cookie{s.ck}, ViewKey: s.pass.Key, Inbox: 1})
	if _, err := v.Hello(tctx(t)); err != nil {
		t.Fatal(err)
	}
	id, _ := payload(s.host.expect("viewState"))["viewId"].(string)
	return v, id
}

// rawView is a view that reads frames as bytes, never decoding them, so
// the test keeps up with 4 MiB frames even with -race.
type rawView struct {
	t  *testing.T
	ws *websocket.Conn
}

func (s *session) rawView(t *testing.T) *rawView {
	t.Helper()
	h := http.Header{}
	h.Set("Origin", s.m.LaunchOrigin)
	h.Set("Cookie", s.ck.Name+"="+s.ck.Value)
	ws, _, err := websocket.Dial(tctx(t), localclient.WSURL(s.p.URL()), &websocket.DialOptions{HTTPHeader: h, Subprotocols: contract.ViewSubprotocols(s.pass.Key)})
	if err != nil {
		t.Fatalf("raw view: dial: %v", err)
	}
	t.Cleanup(func() { _ = ws.CloseNow() })
	ws.SetReadLimit(64 << 20)
	v := &rawView{t, ws}
	v.write(localclient.Envelope(s.m.WorkspaceSessionID, "hello", map[string]any{}, 0))
	v.read() // connected
	v.read() // connectionState
	s.host.expect("viewState")
	return v
}

func (v *rawView) write(frame []byte) {
	v.t.Helper()
	if err := v.ws.Write(tctx(v.t), websocket.MessageText, frame); err != nil {
		v.t.Fatalf("raw view: write: %v", err)
	}
}

func (v *rawView) read() []byte {
	v.t.Helper()
	_, b, err := v.ws.Read(tctx(v.t))
	if err != nil {
		v.t.Fatalf("raw view: read: %v", err)
	}
	return b
}

// stateFrame is an ordered host frame built by concatenation (no JSON
// encoder over 4 MiB per frame): its prefix names the type and sequence.
func stateFrame(sessionID string, seq int, chunk string) (frame, prefix []byte) {
	prefix = fmt.Appendf(nil, `{"protocolVersion":1,"workspaceSessionId":%q,"type":"focusNode","hostSequence":%d,`, sessionID, seq)
	frame = append(append(append([]byte{}, prefix...), `"payload":{"chunk":"`...), chunk...)
	return append(frame, `"}}`...), prefix
}

func TestRelayFloodViewNeverReads(t *testing.T) {
	t.Parallel()
	sc := floodScenario()
	p := startSessions(t, sc.env...)
	s := connect(t, p, 0, localclient.MintOptions{})
	fast := s.rawView(t)
	stalled, stalledID := s.stalledView(t)
	chunk := strings.Repeat("z", 4<<20)
	n := sc.frames
	// The host sends each frame once the fast view has it, so the fast
	// view is never more than one frame behind however loaded the
	// machine, while the stalled view's queue fills.
	for i := range n {
		frame, prefix := stateFrame(s.m.WorkspaceSessionID, i+1, chunk)
		s.host.sendRaw(frame)
		if got := fast.read(); !bytes.HasPrefix(got, prefix) || len(got) != len(frame) {
			t.Fatalf("the fast view got %.120s (%d bytes) for frame %d", got, len(got), i+1)
		}
	}
	peak := p.peakRSS(t)
	t.Logf("broker peak RSS (VmHWM) %d MiB after %d × 4 MiB frames; ceiling %d MiB (0: race build, not asserted)", peak>>20, n, sc.ceiling>>20)
	if sc.ceiling > 0 && peak > sc.ceiling {
		t.Fatalf("broker peak RSS %d MiB over the %d MiB ceiling: the stalled view's queue is not bounded in bytes", peak>>20, sc.ceiling>>20)
	}
	vs := payload(s.host.expect("viewState"))
	if vs["viewId"] != stalledID || vs["state"] != "disconnected" {
		t.Fatalf("host told %v, want %s disconnected", vs, stalledID)
	}
	if v := p.metric(t, "airlock_relay_dropped_views_total"); v != 1 {
		t.Fatalf("dropped views %v: the stalled view was not dropped as a slow consumer", v)
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
	// The fast view is still relayed to, both ways.
	s.host.send("ack", map[string]any{"after": "flood"}, 0)
	if got := fast.read(); !bytes.Contains(got, []byte(`"after":"flood"`)) {
		t.Fatalf("the fast view got %.120s after the flood", got)
	}
	fast.write(localclient.Envelope(s.m.WorkspaceSessionID, "ack", map[string]any{"from": "fast"}, 0))
	if got := payload(s.host.expect("ack")); got["from"] != "fast" {
		t.Fatalf("host got %v", got)
	}
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

// requestFrame is a validateRequest whose target carries pad, built by
// concatenation (no JSON encoder over the pad for every frame).
func requestFrame(sessionID, id, pad string) []byte {
	return fmt.Appendf(nil, `{"protocolVersion":1,"workspaceSessionId":%q,"type":"validateRequest","payload":{"requestId":%q,"target":{"node":%q,"pad":"%s"}}}`,
		sessionID, id, id, pad)
}

func TestRelayFloodHostNotReading(t *testing.T) {
	t.Parallel()
	// A small host queue: views may fill 8 of its 16 messages.
	p := startSessions(t, "AIRLOCK_LOCAL_OUTBOUND_QUEUE=16")
	// The host reads nothing more until the flood is over.
	s := stalledHostSession(t, p)
	v, c := p.view(t, s.m, s.pass)
	// The view sends 512 KiB requests until one is refused busy; after
	// each it waits for the sentinel, so it stops at the first refusal
	// and the host is kept waiting no longer than needed. The socket
	// buffers under the host's queue take a few MiB first, far below
	// n × 512 KiB.
	const n, padLen = 200, 512 << 10
	pad := strings.Repeat("p", padLen)
	var busy []string
	sent := 0
	for ; sent < n && len(busy) == 0; sent++ {
		v.sendRaw(requestFrame(s.m.WorkspaceSessionID, fmt.Sprintf("r%d", sent), pad))
		sentinel(v)
		busy = refusalsUntilSentinel(t, v)
	}
	if len(busy) == 0 {
		t.Fatalf("%d requests of %d KiB at a host that reads nothing: none refused busy", n, padLen>>10)
	}
	t.Logf("request %d of 512 KiB refused busy; %d went through", sent, sent-1)
	if last := fmt.Sprintf("r%d", sent-1); len(busy) != 1 || busy[0] != last {
		t.Fatalf("busy refusals %v, want [%s]", busy, last)
	}
	refused := map[string]bool{busy[0]: true}
	// The host reads again: it is still connected and gets exactly the
	// requests that were not refused, in order.
	if vs := payload(s.host.expect("viewState")); vs["viewId"] != c.ViewID || vs["state"] != "connected" {
		t.Fatalf("host told %v", vs)
	}
	var first string
	for i := range sent {
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
	s.host.send("validateResult", req(first, map[string]any{"node": first, "pad": pad}, nil), 0)
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
	t.Parallel()
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
