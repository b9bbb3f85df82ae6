package load

import (
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/airlock/airlock/broker/contract"
	"github.com/airlock/airlock/broker/v1client"
	"github.com/airlock/airlock/executors/wire"
)

// directServer answers POST /v1/calls with answer(call) after checking
// the token and the envelope, and counts the connections it accepted.
func directServer(t *testing.T, answer func(c wire.Call) (int, string)) (*httptest.Server, *atomic.Int32) {
	t.Helper()
	var conns atomic.Int32
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost || r.URL.Path != "/v1/calls" || r.Header.Get(contract.TokenHeader) != "tok" {
			http.Error(w, "refused", http.StatusUnauthorized)
			return
		}
		body, _ := io.ReadAll(r.Body)
		c, err := wire.ParseCall(body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		status, out := answer(c)
		w.WriteHeader(status)
		_, _ = io.WriteString(w, out)
	}))
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			conns.Add(1)
		}
	}
	srv.Start()
	t.Cleanup(srv.Close)
	return srv, &conns
}

func directCall(t *testing.T) wire.Call {
	return wire.Call{V: wire.Version, CallID: "cli_1", Tool: "read_notes", DescriptorID: "notes",
		Args: json.RawMessage(`{"path":"a.md"}`), BoundsEcho: json.RawMessage(`{}`)}
}

// TestDirectCallerCallsOnOneConnection: every call is a valid envelope
// with its own callId, the answers are validated, and one caller keeps
// one connection.
func TestDirectCallerCallsOnOneConnection(t *testing.T) {
	var ids []string
	srv, conns := directServer(t, func(c wire.Call) (int, string) {
		ids = append(ids, c.CallID)
		data, _ := wire.Observed(c.CallID, json.RawMessage(`{"text":"hi"}`), &wire.Budget{}).MarshalJSON()
		return http.StatusOK, string(data)
	})
	op, closeAll, err := directOp(&v1client.Client{Base: srv.URL, Token: "tok"}, directCall(t), 1, "broker")
	if err != nil {
		t.Fatal(err)
	}
	defer closeAll()
	for range 3 {
		if out, err := op(context.Background(), 0); out != "ok" || err != nil {
			t.Fatalf("call: %q %v", out, err)
		}
	}
	if strings.Join(ids, " ") != "cli_1_0_1 cli_1_0_2 cli_1_0_3" {
		t.Fatalf("callIds %v", ids)
	}
	if n := conns.Load(); n != 1 {
		t.Fatalf("%d connections for one caller", n)
	}
}

// TestDirectCallerRefusesBadAnswers: an answer that is not a valid
// envelope, or a status other than 200 and 400, is an error, and the
// caller dials again for its next call.
func TestDirectCallerRefusesBadAnswers(t *testing.T) {
	replies := []struct {
		status int
		body   string
	}{
		{http.StatusOK, `{"v":1,"callId":"x","ok":true}`},
		{http.StatusServiceUnavailable, `{"error":{}}`},
		{http.StatusBadRequest, `{"v":1,"callId":"x","ok":false,"refused":"args-invalid","why":"bad"}`},
	}
	i := 0
	srv, conns := directServer(t, func(wire.Call) (int, string) {
		r := replies[i]
		i++
		return r.status, r.body
	})
	op, closeAll, err := directOp(&v1client.Client{Base: srv.URL, Token: "tok"}, directCall(t), 1, "broker")
	if err != nil {
		t.Fatal(err)
	}
	defer closeAll()
	if _, err := op(context.Background(), 0); err == nil || !strings.Contains(err.Error(), "not a valid envelope") {
		t.Fatalf("an answer without observed: %v", err)
	}
	if _, err := op(context.Background(), 0); err == nil || !strings.Contains(err.Error(), "503") {
		t.Fatalf("a 503: %v", err)
	}
	if out, err := op(context.Background(), 0); out != "args-invalid" || err != nil {
		t.Fatalf("a refusal: %q %v", out, err)
	}
	if n := conns.Load(); n != 3 {
		t.Fatalf("%d connections, want a new one after each failure (3)", n)
	}
}

// TestDirectCallerNamesItsPeer: a failure on the bare HTTP floor's side
// names that floor, not the broker, and carries the reason the floor
// gave, so the report's "first:" error says what went wrong where.
func TestDirectCallerNamesItsPeer(t *testing.T) {
	srv, _ := directServer(t, func(wire.Call) (int, string) {
		return http.StatusInternalServerError, "open /notes/a.md: no such file\n"
	})
	op, closeAll, err := directOp(&v1client.Client{Base: srv.URL, Token: "tok"}, directCall(t), 1, "bare HTTP floor")
	if err != nil {
		t.Fatal(err)
	}
	defer closeAll()
	_, err = op(context.Background(), 0)
	if want := "bare HTTP floor answered 500 Internal Server Error: open /notes/a.md: no such file"; err == nil || err.Error() != want {
		t.Fatalf("got %v, want %q", err, want)
	}
	srv.Close()
	if _, err := op(context.Background(), 0); err == nil || !strings.HasPrefix(err.Error(), "bare HTTP floor unreachable: ") {
		t.Fatalf("a floor that is gone: %v", err)
	}
}
