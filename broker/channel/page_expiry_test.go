package channel_test

import (
	"net/http"
	"sync"
	"testing"

	"github.com/coder/websocket"

	"github.com/airlock/airlock/broker/channel"
	"github.com/airlock/airlock/broker/contract"
	"github.com/airlock/airlock/executors/testkit"
	"github.com/airlock/airlock/executors/wire"
)

// TestPageClosedWhenItsSessionEnds: a page executor stands on the view
// cookie of a live session (PROTOCOL section 6); when that session ends
// (section 4, Expiry) the page is closed 4402 CREDENTIAL_EXPIRED, its
// call in flight settles page-closed, and later calls for its catalog,
// which is remembered, are refused no-page: no caller's arguments reach
// it afterwards.
func TestPageClosedWhenItsSessionEnds(t *testing.T) {
	ended := make(chan struct{})
	var once sync.Once
	end := func() { once.Do(func() { close(ended) }) }
	t.Cleanup(end)
	w := newWorld(t, func(o *channel.Options) {
		o.Config.LoopbackAuth = true
		o.ViewSession = func(r *http.Request) (<-chan struct{}, bool) {
			c, err := r.Cookie("tensorviz_local_browser_0123456789abcdef")
			return ended, err == nil && c.Value == "live"
		}
	})
	page := w.page("Cookie", "tensorviz_local_browser_0123456789abcdef=live").catalog(desc("pg", 60000))
	testkit.Eventually(t, "the page's catalog", func() bool { return w.routed("pg", "page") })
	inflight := w.callAsync("c1", "pg")
	page.next() // the call reached the page and is in flight
	end()
	page.wantClosed(websocket.StatusCode(contract.CloseCredentialExpired), string(contract.CredentialExpired))
	if a := <-inflight; a.OK || a.Refused != wire.PageClosed {
		t.Errorf("call in flight at expiry: %+v, want %s", a, wire.PageClosed)
	}
	testkit.Eventually(t, "the page to be detached", func() bool { return w.peers("page") == 0 })
	if !w.routed("pg", "page") {
		t.Error("the expired page's catalog was forgotten")
	}
	// A call made now is refused at once and not sent to the closed page.
	wantRule(t, w.call("c2", "pg", "t", `{}`), wire.NoPage)
	select {
	case c := <-page.calls:
		t.Errorf("the expired page received %q", c.CallID)
	default:
	}
}
