package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/airlock/airlock/executors/wire"
)

// argSecret is an argument value the args-invalid whys must never echo;
// the harness also fails the test if it shows up in the broker's output.
const argSecret = "argsecret-7d41c0e9b2"

// TestToolErrorsEndToEnd: the bundled notes tools, run by the real
// binary, answer POST /v1/calls with their own words for what the caller
// can fix, and args-invalid names the failing pointer and keyword
// without the argument's value (PROTOCOL section 8).
func TestToolErrorsEndToEnd(t *testing.T) {
	t.Parallel()
	notes := t.TempDir()
	must(t, os.WriteFile(filepath.Join(notes, "welcome.md"), []byte("# Welcome\n"), 0o644))
	p := startServe(t, procOptions{Args: []string{"--root", "notes=" + notes}, Env: tokenEnv(),
		Secrets: []string{testToken, argSecret}})
	bounds := notesBounds(t, p)
	call := func(tool, args string) wire.Answer {
		t.Helper()
		return postCall(t, p, fmt.Sprintf(`{"v":1,"callId":"c-%s","tool":%q,"descriptorId":"notes","args":%s,"boundsEcho":%s}`,
			tool, tool, args, bounds))
	}
	for _, c := range []struct {
		tool, args string
		rule       wire.Rule
		why        string
	}{
		{"read_notes", `{"path":"missing.md"}`, wire.ExecThrew, `tool error: no note "missing.md"`},
		{"read_notes", `{"path":"../welcome.md"}`, wire.ExecThrew, "tool error: path must be relative to the notes root, without .."},
		{"search_notes", `{"query":"   "}`, wire.ExecThrew, "tool error: empty query: give some text to search for"},
		{"read_notes", `{}`, wire.ArgsInvalid, "/path: required"},
		{"read_notes", `{"path":["` + argSecret + `"]}`, wire.ArgsInvalid, "/path: type"},
		{"read_notes", `{"path":"welcome.md","token":"` + argSecret + `"}`, wire.ArgsInvalid, `unexpected key "token"; allowed: path`},
		{"search_notes", `{"query":""}`, wire.ArgsInvalid, "/query: minLength"},
	} {
		a := call(c.tool, c.args)
		if a.OK || a.Refused != c.rule || a.Why != c.why {
			t.Errorf("%s %s: %s %q, want %s %q", c.tool, c.args, a.Refused, a.Why, c.rule, c.why)
		}
	}
	if a := call("read_notes", `{"path":"welcome.md"}`); !a.OK {
		t.Errorf("a note that exists: %+v", a)
	}
}

// notesBounds reads the bundled notes descriptor's bounds from GET
// /v1/tools, as a caller echoes them.
func notesBounds(t *testing.T, p *proc) json.RawMessage {
	t.Helper()
	code, data, _ := p.do("GET", "/v1/tools", map[string]string{"X-Tensorviz-Token": testToken}, nil)
	var list struct {
		Descriptors []struct {
			DescriptorID string          `json:"descriptorId"`
			Bounds       json.RawMessage `json:"bounds"`
		} `json:"descriptors"`
	}
	if code != 200 || json.Unmarshal(data, &list) != nil {
		t.Fatalf("GET /v1/tools: %d %s", code, data)
	}
	for _, d := range list.Descriptors {
		if d.DescriptorID == "notes" {
			return d.Bounds
		}
	}
	t.Fatalf("notes is not admitted: %s", data)
	return nil
}

// TestToolErrorThroughEnvironment: a tool error raised on a paired
// environment reaches the HTTP caller exactly as a local one would, its
// message cleaned and cut there and passed unchanged by the broker.
func TestToolErrorThroughEnvironment(t *testing.T) {
	t.Parallel()
	w := newChanWorld(t)
	w.startEnv(w.pair("lab"), chanPlugins(t, map[string]wire.Bounds{"fx": w.bounds}))
	w.waitServing("fx", w.bounds)
	long := strings.Repeat("é", wire.MaxWhyBytes)
	for _, c := range []struct{ msg, why string }{
		{`no note "x.md"`, `tool error: no note "x.md"`},
		{"a\x1b[2J\u202eb\u200fc\u2028d", "tool error: a[2Jbcd"},
		{long, "tool error: " + strings.Repeat("é", wire.MaxWhyBytes/2)},
	} {
		args, _ := json.Marshal(map[string]string{"msg": c.msg})
		a := w.call("c-te", "fx", w.bounds, "toolerror", string(args))
		if a.Refused != wire.ExecThrew || a.Why != c.why {
			t.Errorf("%.20q: %s %.60q, want %.60q", c.msg, a.Refused, a.Why, c.why)
		}
	}
	if a := w.call("c-trap", "fx", w.bounds, "trap", `{}`); a.Refused != wire.ExecThrew || a.Why != wire.ExecThrew.Why() {
		t.Errorf("a trap through the environment: %s %q", a.Refused, a.Why)
	}
}
