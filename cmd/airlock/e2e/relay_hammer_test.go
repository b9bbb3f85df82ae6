package e2e

import (
	"context"
	"testing"
	"time"

	"github.com/airlock/airlock/broker/localclient/localclienttest"
	"github.com/airlock/airlock/executors/testkit"
)

// TestRelayHammer churns many hosts, views and requests at once against
// the real binary (built with -race when the tests are), then checks that
// every session, socket and goroutine drains: the sessions expire and are
// reaped, the connection gauges return to zero and the broker's goroutine
// count returns to where it was before the churn.
func TestRelayHammer(t *testing.T) {
	if testing.Short() {
		t.Skip("hammer")
	}
	p := startSessions(t, "LOCAL_BROWSER_TOMBSTONE_RETENTION_SECONDS=1", "AIRLOCK_LOCAL_OUTBOUND_QUEUE=64")
	baseline := p.metric(t, "go_goroutines")
	c := localclienttest.ChurnLoad{Sessions: 6, Views: 5, Cycles: 3, Messages: 40, TTLSeconds: 8, OnSecret: p.AddSecret}
	var st localclienttest.ChurnStats
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := localclienttest.Churn(ctx, p.client(), p.URL(), c, &st); err != nil {
		t.Fatal(err)
	}
	if st.Received.Load() == 0 {
		t.Fatal("nothing was relayed")
	}
	testkit.Eventually(t, "every socket closes", func() bool {
		return p.metric(t, `airlock_ws_connections{endpoint="ws",role="host"}`) == 0 &&
			p.metric(t, `airlock_ws_connections{endpoint="ws",role="view"}`) == 0
	})
	testkit.Eventually(t, "the broker's goroutines return to the baseline", func() bool {
		return p.metric(t, "go_goroutines") <= baseline
	})
	testkit.Eventually(t, "every session expires and is reaped", func() bool {
		return p.metric(t, `airlock_sessions{state="live"}`) == 0 && p.metric(t, `airlock_sessions{state="tombstone"}`) == 0
	})
	t.Logf("e2e hammer: %d sessions × (1 host + %d views) × %d cycles: %d sent, %d received, %d refused, %d handshakes dropped as slow; goroutines back to %v",
		c.Sessions, c.Views, c.Cycles, st.Sent.Load(), st.Received.Load(), st.Refused.Load(), st.Dropped.Load(), baseline)
}
