package sdk

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestHandleAndDispatch(t *testing.T) {
	Handle("test_echo", func(a json.RawMessage) (any, error) { return a, nil })
	Handle("test_obj", func(json.RawMessage) (any, error) { return map[string]int{"n": 1}, nil })
	Handle("test_fail", func(json.RawMessage) (any, error) { return nil, errors.New("no") })
	if !slices.IsSorted(Tools()) || !slices.Contains(Tools(), "test_echo") {
		t.Fatalf("Tools() = %v", Tools())
	}
	if out, err := dispatch("test_echo", []byte(`{"a":1}`)); err != nil || string(out) != `{"a":1}` {
		t.Fatalf("echo: %s %v", out, err)
	}
	if out, err := dispatch("test_echo", nil); err != nil || string(out) != `{}` {
		t.Fatalf("empty args: %s %v", out, err)
	}
	if out, err := dispatch("test_obj", nil); err != nil || string(out) != `{"n":1}` {
		t.Fatalf("obj: %s %v", out, err)
	}
	if out, err := dispatch("test_echo", []byte(`{"h":"<a&b>"}`)); err != nil || string(out) != `{"h":"<a&b>"}` {
		t.Fatalf("HTML escaped: %s %v", out, err)
	}
	if _, err := dispatch("test_fail", nil); err == nil {
		t.Fatal("handler error lost")
	}
	if _, err := dispatch("nope", nil); !errors.Is(err, errUnknownTool) {
		t.Fatalf("unknown tool: %v", err)
	}
}

func TestHandleTwicePanics(t *testing.T) {
	Handle("test_twice", func(json.RawMessage) (any, error) { return nil, nil })
	defer func() {
		if recover() == nil {
			t.Fatal("second Handle did not panic")
		}
	}()
	Handle("test_twice", func(json.RawMessage) (any, error) { return nil, nil })
}

func TestOutsideSandbox(t *testing.T) {
	if _, err := Fetch(Request{URL: "http://example.com"}); !errors.Is(err, ErrNotInSandbox) {
		t.Fatalf("Fetch outside the sandbox: %v", err)
	}
	if Root("notes") != "/notes" {
		t.Fatal(Root("notes"))
	}
	h := Header{"Content-Type": {"text/plain", "x"}}
	if h.Get("Content-Type") != "text/plain" || h.Get("X") != "" {
		t.Fatal("Header.Get")
	}
}

// TestWireShapes pins the JSON the host's fetch expects (ABI.md).
func TestWireShapes(t *testing.T) {
	b, _ := json.Marshal(Request{Method: "GET", URL: "http://h/", Header: Header{"A": {"b"}}, Body: []byte("x")})
	if string(b) != `{"method":"GET","url":"http://h/","header":{"A":["b"]},"body":"eA=="}` {
		t.Fatalf("request JSON %s", b)
	}
	var r Response
	if err := json.Unmarshal([]byte(`{"status":200,"header":{"Content-Type":["t"]},"body":"aGk="}`), &r); err != nil ||
		r.Status != 200 || string(r.Body) != "hi" || r.Header.Get("Content-Type") != "t" {
		t.Fatalf("response %+v %v", r, err)
	}
}

// TestErrorf: an Errorf error is found through wrapping and gives only
// its own text for the caller; other errors give none.
func TestErrorf(t *testing.T) {
	base := errors.New("base")
	err := Errorf("no note %q: %w", "x.md", base)
	if msg, ok := callerMessage(err); !ok || msg != `no note "x.md": base` {
		t.Fatalf("Errorf: %q %v", msg, ok)
	}
	if !errors.Is(err, base) {
		t.Fatal("Errorf does not unwrap to its %w operand")
	}
	wrapped := fmt.Errorf("operator detail: %w", err)
	if msg, ok := callerMessage(wrapped); !ok || msg != `no note "x.md": base` {
		t.Fatalf("wrapped Errorf: %q %v", msg, ok)
	}
	if _, ok := callerMessage(errors.New("plain")); ok {
		t.Fatal("a plain error is for the caller")
	}
	if _, ok := callerMessage(nil); ok {
		t.Fatal("nil is for the caller")
	}
	Handle("test_toolerror", func(json.RawMessage) (any, error) { return nil, Errorf("empty query") })
	if _, err := dispatch("test_toolerror", nil); err == nil {
		t.Fatal("dispatch lost the tool error")
	} else if msg, ok := callerMessage(err); !ok || msg != "empty query" {
		t.Fatalf("dispatch: %q %v", msg, ok)
	}
}
