package wire

import (
	"bytes"
	"testing"
)

// canonicalCases are values the scan takes as canonical (true) and
// values it leaves to the slow path (false).
var canonicalCases = []struct {
	raw   string
	plain bool
}{
	{`{"path":"welcome.md"}`, true},
	{`{"a":1,"b":[true,false,null,"x",-12,{}],"c":{"d":[]}}`, true},
	{`"é ü <&> \u007f"`, false}, // an escape
	{`"é ü <&>"`, true},
	{`999999999999999`, true},
	{`1000000000000000`, false}, // 16 digits: left to the slow path
	{`{"b":1,"a":2}`, false},
	{`{"a":1,"a":2}`, false},
	{`{"a": 1}`, false},
	{`1.0`, false},
	{`1e2`, false},
	{`-0`, false},
	{`01`, false},
	{`"\u2028"`, false},
	{"\"\u2028\"", false},
	{"\"\xff\"", false},
	{`{"a":1}x`, false},
	{`{"a":1`, false},
	{`[1,]`, false},
	{`tru`, false},
}

// TestCanonicalScan: the scan accepts exactly the cases above, and
// Canonical agrees with decoding and encoding again on each.
func TestCanonicalScan(t *testing.T) {
	for _, c := range canonicalCases {
		if got := canonical([]byte(c.raw)); got != c.plain {
			t.Errorf("canonical(%s) = %v", c.raw, got)
		}
		fast, ferr := Canonical([]byte(c.raw))
		slow, serr := recode([]byte(c.raw))
		if (ferr == nil) != (serr == nil) || !bytes.Equal(fast, slow) {
			t.Errorf("Canonical(%s) = %s, %v; recoded %s, %v", c.raw, fast, ferr, slow, serr)
		}
	}
}

// FuzzCanonical holds the scan to the slow path: whatever it takes as
// canonical, decoding and encoding again gives back byte for byte.
func FuzzCanonical(f *testing.F) {
	for _, c := range canonicalCases {
		f.Add([]byte(c.raw))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		if !canonical(raw) {
			return
		}
		slow, err := recode(raw)
		if err != nil || !bytes.Equal(slow, raw) {
			t.Fatalf("%q taken as canonical, recoded %q, %v", raw, slow, err)
		}
	})
}
