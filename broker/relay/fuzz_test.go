package relay

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/airlock/airlock/broker/relay/contract"
)

// FuzzRelay feeds arbitrary frames, from either role, through the
// contract and the hub of a session with requests and a snapshot ask
// pending. Nothing may panic, and no frame the contract refused may reach
// any socket: every frame a peer receives is either broker-made or the
// validated input itself.
func FuzzRelay(f *testing.F) {
	files, _ := filepath.Glob(filepath.Join("..", "..", "testdata", "relay", "*.txt"))
	for _, file := range files {
		data, err := os.ReadFile(file)
		if err != nil {
			f.Fatal(err)
		}
		head, frame, _ := strings.Cut(string(data), "\n---\n")
		frame = strings.ReplaceAll(frame, `"ws_test"`, `"`+sid+`"`)
		f.Add([]byte(frame), strings.Contains(head, "role: host"), strings.Contains(head, "kind: binary"))
	}
	f.Fuzz(func(t *testing.T, data []byte, fromHost, binary bool) {
		h := New(Options{SessionID: sid, CanPropose: true, MaxViews: 4})
		host, a, b := &box{}, &box{}, &box{}
		hm, _, _ := h.Join(contract.Host, host)
		am, _, _ := h.Join(contract.View, a)
		h.Join(contract.View, b)
		seed(t, h, am, `{"protocolVersion":1,"workspaceSessionId":"`+sid+`","type":"validateRequest","payload":{"requestId":"r1","target":"t"}}`)
		seed(t, h, am, `{"protocolVersion":1,"workspaceSessionId":"`+sid+`","type":"snapshotRequest","payload":{"lastHostSequence":null}}`)
		for _, x := range []*box{host, a, b} {
			x.frames = nil
		}
		sender := am
		if fromHost {
			sender = hm
		}
		ctx := contract.Context{Role: sender.role, SessionID: sid, ViewID: sender.id, CanPropose: true}
		msg, r := contract.Validate(contract.Frame{Binary: binary, Data: data}, ctx)
		if r == nil {
			_, _ = h.Handle(sender, msg)
		}
		for _, x := range []*box{host, a, b} {
			for _, got := range x.frames {
				checkReceived(t, got, data, r == nil)
			}
		}
		h.Close(1001, "going away")
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

func checkReceived(t *testing.T, got, input []byte, accepted bool) {
	t.Helper()
	if bytes.Equal(got, input) {
		if !accepted {
			t.Fatalf("a refused frame was relayed: %q", input)
		}
		return
	}
	var env struct {
		Type    string          `json:"type"`
		Payload json.RawMessage `json:"payload"`
	}
	if err := json.Unmarshal(got, &env); err != nil || !brokerTypes[env.Type] {
		t.Fatalf("a peer received a frame that is neither broker-made nor the validated input: %q", got)
	}
}
