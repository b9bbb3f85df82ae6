package relay

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/airlock/airlock/broker/contract"
)

// FuzzRelay feeds a short sequence of arbitrary frames, each from the host
// or from view a, through the contract and the hub of a session where view
// a has a validateRequest and a snapshot ask pending and view b has asked
// for nothing. Nothing may panic, and the routing rules must hold on what
// every peer receives:
//   - each frame is broker-made or byte-for-byte an input the contract
//     accepted (raw bytes are forwarded, never re-encoded);
//   - host input never reaches the host, view input never reaches a view;
//   - ordered host state reaches each view in strictly increasing
//     hostSequence (a repeat or rewind is refused, not relayed);
//   - view b, which asked for nothing, gets no reply, progress or snapshot.
//
// Each property fails when the rule it guards is removed from the hub (the
// seeds below repeat ordered frames, so a missing sequence check is found
// at once).
func FuzzRelay(f *testing.F) {
	files, _ := filepath.Glob(filepath.Join("..", "..", "testdata", "relay", "*.txt"))
	for _, file := range files {
		data, err := os.ReadFile(file)
		if err != nil {
			f.Fatal(err)
		}
		head, frame, _ := strings.Cut(string(data), "\n---\n")
		frame = strings.ReplaceAll(frame, `"ws_test"`, `"`+sid+`"`)
		roles := uint8(0)
		if strings.Contains(head, "role: host") {
			roles = 0b111
		}
		// Alone, and twice in a row (a repeat must not be relayed twice
		// when it is ordered).
		f.Add([]byte(frame), []byte{}, []byte{}, roles, strings.Contains(head, "kind: binary"))
		f.Add([]byte(frame), []byte(frame), []byte{}, roles, false)
	}
	state := func(seq int) []byte {
		return []byte(`{"protocolVersion":1,"workspaceSessionId":"` + sid + `","type":"focusNode","payload":{},"hostSequence":` + strconv.Itoa(seq) + `}`)
	}
	f.Add(state(5), state(3), state(6), uint8(0b111), false)
	f.Add(state(1), state(1), state(2), uint8(0b111), false)
	f.Fuzz(func(t *testing.T, f0, f1, f2 []byte, roles uint8, binary bool) {
		h := New(Options{SessionID: sid, Capabilities: contract.Capabilities{CanProposeSourceEdits: true}, MaxViews: 4})
		defer h.Close(contract.CloseGoingAway, contract.ReasonGoingAway)
		host, a, b := &box{}, &box{}, &box{}
		hm, _, _ := h.Join(contract.Host, host)
		am, _, _ := h.Join(contract.View, a)
		h.Join(contract.View, b)
		seed(t, h, am, `{"protocolVersion":1,"workspaceSessionId":"`+sid+`","type":"validateRequest","payload":{"requestId":"r1","target":"t"}}`)
		seed(t, h, am, `{"protocolVersion":1,"workspaceSessionId":"`+sid+`","type":"snapshotRequest","payload":{"lastHostSequence":null}}`)
		for _, x := range []*box{host, a, b} {
			x.frames = nil
		}
		fromHost := map[string]bool{} // accepted inputs by content, and who sent them
		fromView := map[string]bool{}
		for i, data := range [][]byte{f0, f1, f2} {
			if i > 0 && len(data) == 0 {
				continue
			}
			sender, senders := am, fromView
			if roles&(1<<i) != 0 {
				sender, senders = hm, fromHost
			}
			ctx := contract.Context{Role: sender.role, SessionID: sid, ViewID: sender.id, CanPropose: true}
			msg, r := contract.Validate(contract.Frame{Binary: binary && i == 0, Data: data}, ctx)
			if r != nil {
				continue
			}
			if r, _ := h.Handle(sender, msg); r == nil {
				senders[string(data)] = true
			}
		}
		check := func(name string, x *box, isView, asked bool) {
			lastSeq := int64(0)
			for _, got := range x.frames {
				env := decodeReceived(t, got)
				switch {
				case fromHost[string(got)] && fromView[string(got)]:
					// The same bytes from both sides (an ack): either way is right.
				case fromHost[string(got)]:
					if !isView {
						t.Fatalf("host input came back to the host: %q", got)
					}
				case fromView[string(got)]:
					if isView {
						t.Fatalf("view input reached %s: %q", name, got)
					}
				case brokerTypes[env.Type]:
					continue
				default:
					t.Fatalf("%s received a frame that is neither broker-made nor an accepted input: %q", name, got)
				}
				spec, _ := contract.Lookup(env.Type)
				if spec.Ordered {
					if env.HostSequence <= lastSeq {
						t.Fatalf("%s got hostSequence %d after %d", name, env.HostSequence, lastSeq)
					}
					lastSeq = env.HostSequence
				}
				if !asked && (spec.Kind == contract.Progress || spec.Kind == contract.Result || env.Type == "snapshot") {
					t.Fatalf("%s, which asked for nothing, got %q", name, got)
				}
			}
		}
		check("the host", host, false, true)
		check("view a", a, true, true)
		check("view b", b, true, false)
	})
}

func seed(t *testing.T, h *Hub, m *Member, frame string) {
	msg, r := contract.Validate(contract.Frame{Data: []byte(frame)}, contract.Context{Role: m.role, SessionID: sid, ViewID: m.id})
	if r != nil {
		t.Fatalf("seed refused: %v", r)
	}
	if _, err := h.Handle(m, msg); err != nil {
		t.Fatal(err)
	}
}

// brokerTypes are the types only the broker makes (cancels it
// synthesizes are not possible here: no view leaves).
var brokerTypes = map[string]bool{"connected": true, "connectionState": true, "viewState": true, "error": true}

type received struct {
	Type         string `json:"type"`
	HostSequence int64  `json:"hostSequence"`
}

// decodeReceived reads what a peer received; everything the hub sends is
// a JSON received.
func decodeReceived(t *testing.T, frame []byte) received {
	t.Helper()
	var env received
	if err := json.Unmarshal(frame, &env); err != nil {
		t.Fatalf("a peer received a frame that is not an received: %q", frame)
	}
	return env
}
