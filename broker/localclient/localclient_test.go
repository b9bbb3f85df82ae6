package localclient

import (
	"errors"
	"testing"

	"github.com/coder/websocket"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestWSURL(t *testing.T) {
	for in, want := range map[string]string{
		"http://127.0.0.1:7420":     "ws://127.0.0.1:7420/local/ws",
		"http://127.0.0.1:7420/":    "ws://127.0.0.1:7420/local/ws",
		"https://example.com":       "wss://example.com/local/ws",
		"https://example.com:8443/": "wss://example.com:8443/local/ws",
	} {
		if got := WSURL(in); got != want {
			t.Errorf("WSURL(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestViewURL(t *testing.T) {
	m := &Minted{SessionInfo: SessionInfo{WorkspaceSessionID: "ws_abc"}, ViewCredential: "cred-_x"}
	if got := m.ViewURL("http://127.0.0.1:7420/"); got != "http://127.0.0.1:7420/local/view#ws_abc.cred-_x" {
		t.Fatal(got)
	}
}

func TestEnvelope(t *testing.T) {
	got := string(Envelope("ws_a", "focusNode", map[string]any{"n": 1}, 7))
	want := `{"hostSequence":7,"payload":{"n":1},"protocolVersion":1,"type":"focusNode","workspaceSessionId":"ws_a"}`
	if got != want {
		t.Fatalf("%s", got)
	}
	if got := string(Envelope("ws_a", "ack", map[string]any{}, 0)); got != `{"payload":{},"protocolVersion":1,"type":"ack","workspaceSessionId":"ws_a"}` {
		t.Fatalf("%s", got)
	}
}

func TestCloseStatus(t *testing.T) {
	err := errors.Join(ErrClosed, websocket.CloseError{Code: 4402, Reason: "CREDENTIAL_EXPIRED"})
	if code, reason := CloseStatus(err); code != 4402 || reason != "CREDENTIAL_EXPIRED" {
		t.Fatal(code, reason)
	}
	if code, _ := CloseStatus(ErrClosed); code != -1 {
		t.Fatal(code)
	}
}

func TestMessageError(t *testing.T) {
	m := &Message{Type: "error", Payload: []byte(`{"code":"INVALID_MESSAGE","detail":"sequence","requestId":"r1"}`)}
	if pe := m.Error(); pe == nil || pe.Code != "INVALID_MESSAGE" || pe.Detail != "sequence" || pe.RequestID != "r1" {
		t.Fatalf("%+v", pe)
	}
	if (&Message{Type: "ack"}).Error() != nil {
		t.Fatal("ack is not an error")
	}
}
