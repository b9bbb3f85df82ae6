package e2e

import (
	"strings"
	"testing"

	"github.com/airlock/airlock/executors/wire"
)

// TestFetchEmbeddedLoopbackRefused: IPv6 spellings of an allowlisted
// loopback address (IPv4-mapped, NAT64, IPv4-compatible) are other hosts,
// refused host-not-allowed as any host outside allowedHosts is; only the
// exact entry is dialled. The literal forms never reach the dialler's
// address check, which the unit tests of public cover for resolved names.
func TestFetchEmbeddedLoopbackRefused(t *testing.T) {
	t.Parallel()
	w := newFixtureWorld(t)
	for _, host := range []string{"[64:ff9b::7f00:1]", "[::ffff:127.0.0.1]", "[::ffff:7f00:1]", "[::127.0.0.1]", "[2002:7f00:1::1]"} {
		url := "http://" + host + ":" + w.webPort + "/ok"
		a := w.call(t, "fetch", `{"url":"`+url+`"}`)
		if a.OK || a.Refused != wire.HostNotAllowed {
			t.Errorf("%s: %+v, want refused host-not-allowed", url, a)
		}
	}
	// The positive control on the same path: the allowlisted spelling of
	// the same server is fetched.
	a := w.call(t, "fetch", `{"url":"http://127.0.0.1:`+w.webPort+`/ok"}`)
	if !a.OK || !strings.Contains(string(a.Observed), "hello from web") {
		t.Fatalf("allowlisted fetch: %+v", a)
	}
}
