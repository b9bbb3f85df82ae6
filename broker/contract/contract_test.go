package contract

import (
	"bytes"
	"compress/gzip"
	"encoding/base64"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

const (
	testSession = "ws_test"
	testView    = "v_me"
)

// golden is one case of testdata/relay: header lines, "---", the frame.
type golden struct {
	name  string
	frame Frame
	ctx   Context
	want  string // "OK" or "CODE detail [requestId]"
}

// goldenDir is the shared golden folder of /local/ws frames.
var goldenDir = filepath.Join("..", "..", "testdata", "relay")

func loadGolden(t testing.TB) []golden {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(goldenDir, "*.txt"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no golden frames in %s: %v", goldenDir, err)
	}
	var out []golden
	for _, f := range files {
		out = append(out, parseGolden(t, f))
	}
	return out
}

func parseGolden(t testing.TB, path string) golden {
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	head, frame, ok := strings.Cut(string(data), "\n---\n")
	if !ok {
		t.Fatalf("%s: no --- separator", path)
	}
	g := golden{name: strings.TrimSuffix(filepath.Base(path), ".txt"),
		ctx: Context{Role: View, SessionID: testSession, ViewID: testView}}
	for _, line := range strings.Split(head, "\n") {
		k, v, _ := strings.Cut(line, ": ")
		switch k {
		case "role":
			if v == "host" {
				g.ctx.Role, g.ctx.ViewID = Host, ""
			}
		case "handshake":
			g.ctx.Handshake = v == "true"
		case "propose":
			g.ctx.CanPropose = v == "true"
		case "kind":
			g.frame.Binary, g.frame.Oversize = v == "binary", v == "oversize"
		case "want":
			g.want = v
		}
	}
	if !g.frame.Binary && !g.frame.Oversize {
		g.frame.Data = []byte(frame)
	}
	return g
}

func outcome(m *Message, r *Refusal) string {
	if r == nil {
		if m == nil {
			return "nil message without refusal"
		}
		return "OK"
	}
	s := string(r.Code) + " " + r.Detail
	if r.RequestID != "" {
		s += " " + r.RequestID
	}
	return s
}

// TestGoldenFrames checks every golden frame against its expected outcome.
func TestGoldenFrames(t *testing.T) {
	for _, g := range loadGolden(t) {
		t.Run(g.name, func(t *testing.T) {
			m, r := Validate(g.frame, g.ctx)
			if got := outcome(m, r); got != g.want {
				t.Fatalf("got %q, want %q", got, g.want)
			}
			if r == nil && !bytes.Equal(m.Raw, g.frame.Data) {
				t.Fatal("Raw is not the frame as received")
			}
		})
	}
}

// TestGoldenCoversEveryType: each type of the contract appears in at
// least one golden frame, so a new type cannot land untested.
func TestGoldenCoversEveryType(t *testing.T) {
	seen := map[string]bool{}
	for _, g := range loadGolden(t) {
		var env struct {
			Type string `json:"type"`
		}
		if json.Unmarshal(g.frame.Data, &env) == nil {
			seen[env.Type] = true
		}
	}
	for _, typ := range Types() {
		if !seen[typ] {
			t.Errorf("type %s has no golden frame", typ)
		}
	}
}

func frame(typ string, payload any, seq int64) []byte {
	env := map[string]any{"protocolVersion": 1, "workspaceSessionId": testSession, "type": typ, "payload": payload}
	if seq != 0 {
		env["hostSequence"] = seq
	}
	b, _ := json.Marshal(env)
	return b
}

func TestInvalidUTF8(t *testing.T) {
	data := []byte(`{"protocolVersion":1,"workspaceSessionId":"ws_test","type":"ack","payload":{"x":"` + "\xff\xfe" + `"}}`)
	_, r := Validate(Frame{Data: data}, Context{Role: View, SessionID: testSession})
	if r == nil || r.Detail != DetailNotJSONObject {
		t.Fatalf("invalid UTF-8: %v", r)
	}
}

func gzipBase64(t *testing.T, n int) string {
	var buf bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&buf, gzip.NoCompression)
	_, _ = zw.Write(bytes.Repeat([]byte("a"), n))
	_ = zw.Close()
	return base64.StdEncoding.EncodeToString(buf.Bytes())
}

func TestGraphSizeBound(t *testing.T) {
	ctx := Context{Role: View, SessionID: testSession, ViewID: testView}
	under := gzipBase64(t, MaxGraphBytes-1024)
	over := gzipBase64(t, MaxGraphBytes+1024)
	if _, r := Validate(Frame{Data: frame("graphPublishRequest", map[string]any{"requestId": "g", "target": "t", "graphGzipBase64": under}, 0)}, ctx); r != nil {
		t.Fatalf("graph under 10 MiB refused: %v", r)
	}
	_, r := Validate(Frame{Data: frame("graphPublishRequest", map[string]any{"requestId": "g", "target": "t", "graphGzipBase64": over}, 0)}, ctx)
	if r == nil || r.Detail != DetailGraphTooLarge {
		t.Fatalf("graph over 10 MiB: %v", r)
	}
}

func TestResultSizeBound(t *testing.T) {
	ctx := Context{Role: Host, SessionID: testSession}
	big := strings.Repeat("x", MaxResultBytes)
	for _, typ := range []string{"captureInspectResult", "exportResult"} {
		_, r := Validate(Frame{Data: frame(typ, map[string]any{"requestId": "r", "target": "t", "blob": big}, 0)}, ctx)
		if r == nil || r.Detail != DetailResultTooLarge {
			t.Errorf("%s over 16 MiB: %v", typ, r)
		}
		if _, r := Validate(Frame{Data: frame(typ, map[string]any{"requestId": "r", "target": "t", "blob": big[:1<<20]}, 0)}, ctx); r != nil {
			t.Errorf("%s of 1 MiB: %v", typ, r)
		}
	}
}

func TestTargetIsCanonical(t *testing.T) {
	ctx := Context{Role: View, SessionID: testSession}
	a := []byte(`{"protocolVersion":1,"workspaceSessionId":"ws_test","type":"validateRequest","payload":{"requestId":"r","target":{"b":1,"a":[1, 2]}}}`)
	b := []byte(`{"protocolVersion":1,"workspaceSessionId":"ws_test","type":"validateRequest","payload":{"target":{ "a":[1,2],"b":1 },"requestId":"r"}}`)
	ma, _ := Validate(Frame{Data: a}, ctx)
	mb, _ := Validate(Frame{Data: b}, ctx)
	if ma == nil || mb == nil || ma.Target != mb.Target || ma.Target != `{"a":[1,2],"b":1}` {
		t.Fatalf("targets %q %q", ma.Target, mb.Target)
	}
}

// TestSpecsTable pins the direction of every type against PROTOCOL section 4.5.
func TestSpecsTable(t *testing.T) {
	want := map[string]Role{
		"hello": Host | View, "connected": 0, "connectionState": 0, "viewState": 0, "error": Host | View,
		"activeTarget": Host, "projection": Host, "syncState": Host, "staleState": Host, "focusNode": Host,
		"ack": Host | View, "snapshotRequest": View, "snapshot": Host, "revealNode": View,
		"sourceEditRequest": View, "sourceEditCancel": View, "sourceEditReview": Host, "sourceEditResult": Host,
		"validateRequest": View, "validateCancel": View, "validateResult": Host,
		"captureInspectRequest": View, "captureInspectCancel": View, "captureInspectResult": Host,
		"exportRequest": View, "exportCancel": View, "exportResult": Host,
		"graphPublishRequest": View, "graphPublishCancel": View, "graphPublishState": Host, "graphPublishResult": Host,
		"candidateRequest": View, "candidateResult": Host,
	}
	if len(want) != len(Types()) {
		t.Fatalf("contract has %d types, PROTOCOL %d", len(Types()), len(want))
	}
	for typ, from := range want {
		s, ok := Lookup(typ)
		if !ok || s.From != from {
			t.Errorf("%s: from %v, want %v", typ, s.From, from)
		}
	}
}
