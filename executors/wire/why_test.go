package wire

import (
	"strings"
	"testing"
	"unicode/utf8"
)

// TestPeerWhyStripsAndCuts: a peer's why loses control, bidirectional
// override and line/paragraph separator characters and is cut to
// MaxWhyBytes on a UTF-8 boundary; a plain short why passes unchanged.
func TestPeerWhyStripsAndCuts(t *testing.T) {
	cases := []struct{ in, want string }{
		{"fetch failed: 404", "fetch failed: 404"},
		{"\x1b[2Jcleared", "[2Jcleared"},
		{"a\u202eb\u202ac\u2066d\u2069e", "abcde"},
		{"l\u200er\u200fa\u061cm", "lram"},
		{"line\nbreak\r\ttab\u2028ls\u2029ps\u0085nel\x00nul\x7fdel", "linebreaktablspsnelnuldel"},
		{"é ok ✓", "é ok ✓"},
	}
	for _, c := range cases {
		if got := PeerWhy(c.in); got != c.want {
			t.Errorf("PeerWhy(%q) = %q, want %q", c.in, got, c.want)
		}
	}
	huge := "\x1b[2J\u202e" + strings.Repeat("W", 15<<20)
	got := PeerWhy(huge)
	if len(got) != MaxWhyBytes || strings.ContainsAny(got, "\x1b\u202e") {
		t.Fatalf("huge why: %d bytes, control kept: %v", len(got), strings.ContainsAny(got, "\x1b\u202e"))
	}
	// A cut that would split a multi-byte rune ends before it.
	multi := strings.Repeat("a", MaxWhyBytes-1) + "é"
	got = PeerWhy(multi)
	if !utf8.ValidString(got) || len(got) != MaxWhyBytes-1 {
		t.Fatalf("cut on a rune: %d bytes, valid %v", len(got), utf8.ValidString(got))
	}
	if got := PeerWhy(strings.Repeat("b", MaxWhyBytes)); len(got) != MaxWhyBytes {
		t.Fatalf("why of exactly MaxWhyBytes cut to %d", len(got))
	}
}

// TestToolErrorWhy: a tool's message is cleaned and cut to MaxWhyBytes
// after the prefix; nothing left means no tool-error why at all; and a
// tool error relayed by a peer passes PeerWhy unchanged, so it reads the
// same from a paired environment as from here.
func TestToolErrorWhy(t *testing.T) {
	if got := ToolErrorWhy(`no note "x.md"`); got != `tool error: no note "x.md"` {
		t.Fatalf("plain message: %q", got)
	}
	if got := ToolErrorWhy("\x1b\u202e\u200f"); got != "" {
		t.Fatalf("empty after cleaning: %q", got)
	}
	long := ToolErrorWhy("\u2066" + strings.Repeat("é", MaxWhyBytes))
	if long != ToolErrorPrefix+strings.Repeat("é", MaxWhyBytes/2) {
		t.Fatalf("long message: %d bytes", len(long))
	}
	for _, why := range []string{long, ToolErrorWhy("x"), "fetch failed"} {
		if got := PeerWhy(why); got != why {
			t.Errorf("PeerWhy changed %.40q to %.40q", why, got)
		}
	}
	if got := PeerWhy(ToolErrorPrefix + "\x1b[1m" + strings.Repeat("W", 2*MaxWhyBytes)); got != ToolErrorPrefix+"[1m"+strings.Repeat("W", MaxWhyBytes-3) {
		t.Fatalf("peer tool error: %d bytes", len(got))
	}
	if got := PeerWhy(ToolErrorPrefix + "\x1b"); got != ToolErrorPrefix {
		t.Fatalf("peer tool error with nothing to show: %q", got)
	}
}

// TestParsePeerAnswerForeignRule: a refusal under a well-formed rule id
// outside the vocabulary is refused by ParseAnswer but taken by
// ParsePeerAnswer as exec-threw, its why naming the rule first (cleaned,
// within MaxWhyBytes however long the peer's why) and its budget kept. A
// rule that is not an identifier, and any other flaw, fail both alike.
func TestParsePeerAnswerForeignRule(t *testing.T) {
	frame := `{"v":1,"callId":"c","ok":false,"refused":"quota-exceeded","why":"over\u001b quota` + strings.Repeat("W", 2*MaxWhyBytes) + `","budget":{"requestsUsed":1,"requestsLimit":2}}`
	if _, err := ParseAnswer([]byte(frame)); RuleOf(err) != Malformed {
		t.Fatalf("ParseAnswer took a foreign rule: %v", err)
	}
	a, foreign, err := ParsePeerAnswer([]byte(frame))
	if err != nil || !foreign || a.Refused != ExecThrew || a.CallID != "c" {
		t.Fatalf("ParsePeerAnswer: %v %v %+v", err, foreign, a)
	}
	if want := ForeignWhy("quota-exceeded", "over quota"); !strings.HasPrefix(a.Why, want) || len(a.Why) != MaxWhyBytes || strings.HasPrefix(a.Why, ToolErrorPrefix) {
		t.Errorf("why %d bytes %.80q, want it to start %q", len(a.Why), a.Why, want)
	}
	if a.Budget == nil || *a.Budget != (Budget{RequestsUsed: 1, RequestsLimit: 2}) {
		t.Errorf("budget %+v", a.Budget)
	}
	for _, f := range []string{
		`{"v":1,"callId":"c","ok":false,"refused":"","why":"x"}`,
		`{"v":1,"callId":"c","ok":false,"refused":"a\u0007b","why":"x"}`,
		`{"v":1,"callId":"c","ok":false,"refused":"quota-exceeded\u200f","why":"x"}`,
		`{"v":1,"callId":"c","ok":false,"refused":"` + strings.Repeat("r", maxIDLen+1) + `","why":"x"}`,
		`{"v":1,"callId":"c","ok":false,"refused":7,"why":"x"}`,
		`{"v":1,"callId":"c","ok":false,"refused":"quota-exceeded"}`,
		`{"v":1,"callId":"c","ok":false,"refused":"quota-exceeded","why":"x","observed":{}}`,
		`{"v":1,"callId":"c","ok":false,"refused":"quota-exceeded","why":"x","grant":"everything"}`,
	} {
		_, want := ParseAnswer([]byte(f))
		if a, foreign, err := ParsePeerAnswer([]byte(f)); err == nil || foreign || RuleOf(err) != RuleOf(want) {
			t.Errorf("%s: ParsePeerAnswer %v %v %+v, ParseAnswer %v", f, err, foreign, a, want)
		}
	}
	a, foreign, err = ParsePeerAnswer([]byte(`{"v":1,"callId":"c","ok":false,"refused":"fetch-failed","why":"404"}`))
	if err != nil || foreign || a.Refused != FetchFailed || a.Why != "404" {
		t.Errorf("a known rule: %v %v %+v", err, foreign, a)
	}
}

// TestForeignWhy: the rule always survives the cut, an empty why adds
// nothing after it, and the whole is within MaxWhyBytes.
func TestForeignWhy(t *testing.T) {
	if got := ForeignWhy("quota-exceeded", ""); got != foreignWhyPrefix+"quota-exceeded" {
		t.Errorf("empty why: %q", got)
	}
	if got := ForeignWhy("quota-exceeded", "\x1b"); got != foreignWhyPrefix+"quota-exceeded" {
		t.Errorf("why with nothing to show: %q", got)
	}
	if got := ForeignWhy("quota-exceeded", "over"); got != foreignWhyPrefix+"quota-exceeded: over" {
		t.Errorf("short why: %q", got)
	}
	long := strings.Repeat("é", maxIDLen)
	got := ForeignWhy(long, strings.Repeat("W", 4*MaxWhyBytes))
	if !strings.HasPrefix(got, foreignWhyPrefix+long+": W") || len(got) > MaxWhyBytes || !utf8.ValidString(got) {
		t.Errorf("long rule and why: %d bytes %.80q", len(got), got)
	}
}
