package baseline

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/airlock/airlock/executors/wire"
)

// httpFloor checks the bare HTTP front of a reactor (TestReactor's
// runner): answers as envelopes, one instance per request in flight kept
// for the next, failures answered 500 with the instance dropped, and
// nothing served once closed.
func httpFloor(t *testing.T, r *Runner) {
	ctx := context.Background()
	f, err := r.HTTPFloor("echo")
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(f)
	defer srv.Close()

	post := func(body string) (int, string) {
		t.Helper()
		resp, err := http.Post(srv.URL+"/v1/calls", "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		out, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(out)
	}
	call := `{"v":1,"callId":"c-1","tool":"echo","descriptorId":"fx","args":{"n":2},"boundsEcho":{}}`
	code, body := post(call)
	a, err := wire.ParseAnswer([]byte(body))
	if code != http.StatusOK || err != nil || !a.OK || a.CallID != "c-1" || string(a.Observed) != `{"n":2}` {
		t.Fatalf("echo: %d %s %v", code, body, err)
	}

	// Without the HTTP hop, the same envelope gets the same answer, and
	// what is not an envelope is said to be so.
	if got, err := f.Answer(ctx, []byte(call)); err != nil || string(got) != body {
		t.Fatalf("Answer: %s %v, over HTTP %s", got, err, body)
	}
	if _, err := f.Answer(ctx, []byte(`{"callId":`)); !errors.Is(err, errNotEnvelope) {
		t.Fatalf("Answer of a cut envelope: %v", err)
	}

	// Four requests at once leave four idle instances; the next four
	// reuse them.
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			if code, body := post(call); code != http.StatusOK {
				t.Errorf("concurrent echo: %d %s", code, body)
			}
		})
	}
	wg.Wait()
	f.mu.Lock()
	idle := len(f.idle)
	f.mu.Unlock()
	if idle < 1 || idle > 4 {
		t.Fatalf("%d idle instances after 4 concurrent requests", idle)
	}

	if code, _ := post(`{"v":1,"callId":`); code != http.StatusBadRequest {
		t.Fatalf("a cut envelope: %d", code)
	}
	// A whole, valid envelope one byte over the bound is not read.
	head, tail := `{"v":1,"callId":"big","args":{"pad":"`, `"}}`
	big := head + strings.Repeat("x", maxHTTPCall+1-len(head)-len(tail)) + tail
	if code, _ := post(big); code != http.StatusBadRequest {
		t.Fatalf("an envelope of %d bytes: %d", len(big), code)
	}
	if resp, err := http.Get(srv.URL + "/v1/calls"); err != nil || resp.StatusCode != http.StatusMethodNotAllowed {
		t.Fatalf("GET: %v %v", resp, err)
	} else {
		resp.Body.Close()
	}

	// A failing tool answers 500 and its instance is not kept.
	fails, err := r.HTTPFloor("fail")
	if err != nil {
		t.Fatal(err)
	}
	failSrv := httptest.NewServer(fails)
	defer failSrv.Close()
	resp, err := http.Post(failSrv.URL, "application/json", strings.NewReader(call))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusInternalServerError || len(fails.idle) != 0 {
		t.Fatalf("fail: %d, %d idle", resp.StatusCode, len(fails.idle))
	}
	if err := fails.Close(ctx); err != nil {
		t.Fatal(err)
	}

	if err := f.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if code, _ := post(call); code != http.StatusInternalServerError {
		t.Fatalf("after Close: %d", code)
	}
	if f.idle != nil {
		t.Fatal("Close kept idle instances")
	}
}
