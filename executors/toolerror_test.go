package executors

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/airlock/airlock/executors/testkit"
	"github.com/airlock/airlock/executors/wire"
)

// wantWhy wants an exec-threw refusal with exactly why.
func wantWhy(t *testing.T, a wire.Answer, why string) {
	t.Helper()
	wantRule(t, a, wire.ExecThrew)
	if a.Why != why {
		t.Fatalf("why %q, want %q", a.Why, why)
	}
}

func toolErrorArgs(msg string, wrap bool) string {
	b, _ := json.Marshal(map[string]any{"msg": msg, "wrap": wrap})
	return string(b)
}

// TestToolError: a handler's sdk.Errorf reaches the caller as
// "tool error: <message>", cleaned and cut, in both styles; any other
// failure keeps the generic why.
func TestToolError(t *testing.T) {
	generic := wire.ExecThrew.Why()
	forStyles(t, Config{}, defaultBounds(), func(t *testing.T, p *Program) {
		wantWhy(t, call(t, p, "toolerror", toolErrorArgs(`no note "x.md"`, false)), `tool error: no note "x.md"`)
		// Only the Errorf text, not what wraps it (operator detail).
		wantWhy(t, call(t, p, "toolerror", toolErrorArgs("empty query", true)), "tool error: empty query")
		wantWhy(t, call(t, p, "toolerror", toolErrorArgs("a\x1b[2J\u202eb\u2066c\u200fd\u200ee\u061cf\u2028g\u2029h\ni\x85j", false)),
			"tool error: a[2Jbcdefghij")
		long := strings.Repeat("é", 1000) // 2,000 bytes: cut to 1,024 on a rune boundary
		wantWhy(t, call(t, p, "toolerror", toolErrorArgs(long, false)), "tool error: "+strings.Repeat("é", 512))
		// A message with nothing left to show is not worth the prefix.
		wantWhy(t, call(t, p, "toolerror", toolErrorArgs("", false)), generic)
		wantWhy(t, call(t, p, "toolerror", toolErrorArgs("\x1b\u202e", false)), generic)
		// A plain error, a trap and a panic stay generic.
		wantWhy(t, call(t, p, "fail", `{}`), generic)
		wantWhy(t, call(t, p, "trap", `{"kind":"nil"}`), generic)
		wantWhy(t, call(t, p, "trap", `{}`), generic)
		wantWhy(t, call(t, p, "exit3", `{}`), generic)
	})
}

// TestCommandToolErrorConvention: the host reads a command's tool error
// only from exit code 1 with stdout exactly one object {"error":"…"}.
func TestCommandToolErrorConvention(t *testing.T) {
	r := newRuntime(t, Config{})
	p := load(t, r, guestDescriptor("guest", defaultBounds()), testkit.Fixture(t, "guest.wasm"))
	raw := func(out string, code int) wire.Answer {
		b, _ := json.Marshal(map[string]any{"out": out, "code": code})
		return call(t, p, "rawexit", string(b))
	}
	generic := wire.ExecThrew.Why()
	wantWhy(t, raw(`{"error":"x"}`, 1), "tool error: x")
	wantWhy(t, raw(" \n{ \"error\" : \"x\\u0000y\" }\n", 1), "tool error: xy")
	for _, c := range []struct {
		out  string
		code int
	}{
		{`{"error":"x"}`, 2},
		{`{"error":"x"}`, 3},
		{`{"error":5}`, 1},
		{`{"error":null}`, 1},
		{`{"error":"x","detail":"y"}`, 1},
		{`{"error":"x","error":"y"}`, 1},
		{`{"error":"x"}{"error":"y"}`, 1},
		{`{"Error":"x"}`, 1},
		{`["x"]`, 1},
		{`error: x`, 1},
		{``, 1},
	} {
		if a := raw(c.out, c.code); a.Why != generic {
			t.Errorf("%q exit %d: why %q", c.out, c.code, a.Why)
		}
	}
	// Exit code 0 is success whatever the object says.
	if m := wantOK(t, raw(`{"error":"x"}`, 0)); m["error"] != "x" {
		t.Fatalf("exit 0 observed %v", m)
	}
}

// TestReactorKeepsInstanceAfterToolError: a tool error is the handler
// returning normally, so the pooled instance is reused; a plain failure
// still discards it.
func TestReactorKeepsInstanceAfterToolError(t *testing.T) {
	r := newRuntime(t, Config{PoolSize: 1})
	p := load(t, r, guestDescriptor("guest", defaultBounds()), testkit.Fixture(t, "guest-reactor.wasm"))
	count := func() float64 { return wantOK(t, call(t, p, "counter", `{}`))["calls"].(float64) }
	count()
	wantWhy(t, call(t, p, "toolerror", toolErrorArgs("no", false)), "tool error: no")
	if c := count(); c != 2 {
		t.Fatalf("instance after a tool error: counter %v, want 2 (reused)", c)
	}
}
