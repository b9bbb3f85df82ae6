package contract

import (
	"encoding/json"
	"testing"

	"github.com/airlock/airlock/executors/wire/wiretest"
)

// FuzzValidate: nothing panics, and no accepted frame holds two keys equal
// under case folding (strings.EqualFold, an oracle independent of the
// walk) in any object at any depth; a refusal is always a code of the
// contract with a detail.
func FuzzValidate(f *testing.F) {
	for _, g := range loadGolden(f) {
		if !g.frame.Binary && !g.frame.Oversize {
			f.Add(g.frame.Data, g.ctx.Role == Host)
		}
	}
	f.Fuzz(func(t *testing.T, data []byte, fromHost bool) {
		c := Context{Role: View, SessionID: testSession, ViewID: testView, CanPropose: true}
		if fromHost {
			c.Role, c.ViewID = Host, ""
		}
		m, r := Validate(Frame{Data: data}, c)
		if r != nil {
			if r.Code == "" || r.Detail == "" {
				t.Fatalf("refusal without code or detail: %+v", r)
			}
			return
		}
		if wiretest.FoldDuplicate(data) {
			t.Fatalf("accepted a case-folded duplicate key: %q", data)
		}
		if m.ViewID != "" && !idPattern.MatchString(m.ViewID) {
			t.Fatalf("accepted viewId %+q", m.ViewID)
		}
	})
}

// FuzzStringValue checks that the escape-free fast path of stringValue and
// stringIs agrees with encoding/json on every input.
func FuzzStringValue(f *testing.F) {
	for _, s := range []string{`"ws_test"`, `"a\"b"`, `"\u00e9"`, `"é"`, "\"\xff\"", "\"a\tb\"", `""`, `"`, `"a"b"`, `1`, `null`, `"x" `} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, v []byte) {
		got, ok := stringValue(v)
		var want string
		wantOK := len(v) > 0 && v[0] == '"' && json.Unmarshal(v, &want) == nil
		if ok != wantOK || got != want {
			t.Fatalf("stringValue(%q) = %q, %v; encoding/json: %q, %v", v, got, ok, want, wantOK)
		}
		if stringIs(v, want) != wantOK {
			t.Fatalf("stringIs(%q, %q) = %v, want %v", v, want, !wantOK, wantOK)
		}
	})
}

// TestEnvelopeMembersKnowsEveryKey checks that envelopeMembers' switch
// and envelopeKeys name the same keys.
func TestEnvelopeMembersKnowsEveryKey(t *testing.T) {
	for k := range envelopeKeys {
		top, r := envelopeMembers([]byte(`{"` + k + `":1}`))
		if r != nil || top.unknown {
			t.Errorf("%s: refusal %v, unknown %v", k, r, top.unknown)
		}
	}
	if top, r := envelopeMembers([]byte(`{"extra":1}`)); r != nil || !top.unknown {
		t.Errorf("extra: refusal %v, unknown %v", r, top.unknown)
	}
}
