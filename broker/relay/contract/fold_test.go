package contract

import (
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
