package v1client

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"go.uber.org/goleak"

	"github.com/airlock/airlock/executors/wire"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func descriptor(id string, tools ...string) wire.Descriptor {
	d := wire.Descriptor{DescriptorID: id, Bounds: wire.Bounds{TimeoutMs: 100, MemoryMiB: 1, MaxOutputBytes: 10}}
	for _, t := range tools {
		d.Tools = append(d.Tools, wire.Tool{Name: t})
	}
	return d
}

func TestNewCall(t *testing.T) {
	ds := []wire.Descriptor{descriptor("a", "echo", "both"), descriptor("b", "both")}
	c, err := NewCall(ds, "echo", "", json.RawMessage(`{}`))
	if err != nil || c.DescriptorID != "a" || !strings.HasPrefix(c.CallID, "cli_") || len(c.BoundsEcho) == 0 {
		t.Fatalf("%+v %v", c, err)
	}
	if c2, _ := NewCall(ds, "echo", "", json.RawMessage(`{}`)); c2.CallID == c.CallID {
		t.Error("call ids repeat")
	}
	if c, err := NewCall(ds, "both", "b", json.RawMessage(`{}`)); err != nil || c.DescriptorID != "b" {
		t.Fatalf("--descriptor b: %+v %v", c, err)
	}
	for tool, want := range map[string]string{"both": "choose one with --descriptor", "nope": `no admitted descriptor declares tool "nope"`} {
		if _, err := NewCall(ds, tool, "", nil); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want %q", tool, err, want)
		}
	}
	if _, err := NewCall(ds, "echo", "b", nil); err == nil || !strings.Contains(err.Error(), `descriptor "b"`) {
		t.Errorf("a descriptor that lacks the tool: %v", err)
	}
}

// TestClient checks the token header, the paths, and that a refused call
// (400 with an envelope) is an answer, other statuses errors.
func TestClient(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("X-Tensorviz-Token") != "tok" {
			http.Error(w, `{"error":"unauthorized"}`, http.StatusUnauthorized)
			return
		}
		switch r.URL.Path {
		case "/v1/tools":
			_ = json.NewEncoder(w).Encode(map[string]any{"descriptors": []wire.Descriptor{descriptor("a", "echo")}})
		case "/v1/plugins":
			_, _ = io.WriteString(w, `{"plugins":[{"id":"a","origin":"builtin","admitted":true}]}`)
		case "/v1/calls":
			var c wire.Call
			_ = json.NewDecoder(r.Body).Decode(&c)
			w.WriteHeader(http.StatusBadRequest)
			_, _ = io.WriteString(w, `{"v":1,"callId":"`+c.CallID+`","ok":false,"refused":"args-invalid","why":"no"}`)
		}
	}))
	defer srv.Close()
	ctx := context.Background()
	c := &Client{Base: srv.URL, Token: "tok"}
	ds, err := c.Tools(ctx)
	if err != nil || len(ds) != 1 {
		t.Fatalf("tools: %v %v", ds, err)
	}
	sts, err := c.Plugins(ctx)
	if err != nil || len(sts) != 1 || !sts[0].Admitted {
		t.Fatalf("plugins: %v %v", sts, err)
	}
	call, _ := NewCall(ds, "echo", "", json.RawMessage(`{}`))
	a, raw, err := c.Call(ctx, call)
	if err != nil || a.OK || a.Refused != "args-invalid" || len(raw) == 0 {
		t.Fatalf("refused call: %+v %v", a, err)
	}
	bad := &Client{Base: srv.URL, Token: "wrong"}
	if _, err := bad.Tools(ctx); err == nil || !strings.Contains(err.Error(), "401") {
		t.Fatalf("a wrong token: %v", err)
	}
}
