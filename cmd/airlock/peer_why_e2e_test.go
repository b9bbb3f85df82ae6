package main

import (
	"strings"
	"testing"

	"github.com/airlock/airlock/executors/testkit"
	"github.com/airlock/airlock/executors/wire"
)

// TestChannelPeerWhyCleaned: a page peer refusing with a 1 MiB why that
// opens with ESC and U+202E reaches the caller as the same refusal with a
// why of at most wire.MaxWhyBytes, free of control and bidi characters;
// a short clean why passes unchanged on the same path, and each kind of
// unsafe character is removed from one that holds them all.
func TestChannelPeerWhyCleaned(t *testing.T) {
	t.Parallel()
	w := newChanWorld(t)
	b := wire.Bounds{TimeoutMs: 60000, MemoryMiB: 1, MaxOutputBytes: 100, AllowedHosts: []string{}, Roots: []string{}}
	page := w.pageWith(chanViewCookie(t, w, w.broker.URL()))
	page.send(wire.CatalogFrame([]wire.Descriptor{pageDesc("pwhy", b)}))
	testkit.Eventually(t, "pwhy routed to the page", func() bool { return w.tools()["pwhy"] == "page" })

	refuse := func(id, why string) wire.Answer {
		res := w.callAsync(id, "pwhy", b, "echo", `{}`)
		c := page.nextCall()
		page.send([]byte(`{"v":1,"callId":"` + c.CallID + `","ok":false,"refused":"fetch-failed","why":"` + why + `"}`))
		return res()
	}
	a := refuse("dirty", `\u001b[2J\u202e`+strings.Repeat("W", 1<<20))
	if a.Refused != wire.FetchFailed || len(a.Why) > wire.MaxWhyBytes || strings.ContainsAny(a.Why, "\x1b\u202e") {
		t.Fatalf("dirty why reached the caller: refused %q, %d bytes: %.40q", a.Refused, len(a.Why), a.Why)
	}
	if !strings.HasPrefix(a.Why, "[2JWWW") {
		t.Errorf("cleaned why lost its text: %.40q", a.Why)
	}
	if a := refuse("clean", "host answered 404"); a.Refused != wire.FetchFailed || a.Why != "host answered 404" {
		t.Errorf("clean why changed: %+v", a)
	}
	// Every kind of unsafe character of PROTOCOL section 1.8 is removed,
	// with nothing in its place; everything else is kept.
	const mixed = `a\u0000b\u007fc\u0085d\u202ae\u2069f\u200eg\u200fh\u061ci\u2028j\u2029k\ufffdl \u00e9\u2713\u00a0\u200d`
	if a := refuse("mixed", mixed); a.Refused != wire.FetchFailed || a.Why != "abcdefghijkl \u00e9\u2713\u00a0\u200d" {
		t.Errorf("unsafe characters: %+v", a)
	}
}
