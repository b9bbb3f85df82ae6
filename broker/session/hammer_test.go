package session

import (
	"context"
	"testing"
	"time"

	"github.com/airlock/airlock/broker/localclient"
	"github.com/airlock/airlock/broker/localclient/localclienttest"
	"github.com/airlock/airlock/executors/testkit"
)

// TestHammer churns many hosts, views and requests at once under -race,
// then checks that every socket, member, ask and pending request is gone;
// TestMain's leak check covers the goroutines.
func TestHammer(t *testing.T) {
	if testing.Short() {
		t.Skip("hammer")
	}
	local := testLocal()
	local.OutboundQueue = 64
	clock := newFakeClock()
	b := startBroker(t, local, clock)
	var st localclienttest.ChurnStats
	c := localclienttest.ChurnLoad{Sessions: 8, Views: 6, Cycles: 4, Messages: 60}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := localclienttest.Churn(ctx, &localclient.Client{Base: b.URL, Token: testToken}, b.Origin, c, &st); err != nil {
		t.Fatal(err)
	}
	testkit.Eventually(t, "every socket and table drains", func() bool {
		s := b.Stats()
		return s.Sockets == 0 && s.Hosts == 0 && s.Views == 0 && s.Asks == 0 && s.Pending == 0
	})
	testkit.Eventually(t, "every session expires and is reaped", func() bool {
		clock.Advance(time.Hour) // 8 h of TTL, then 1 h of retention
		s := b.Stats()
		return s.Live == 0 && s.Tombstones == 0
	})
	t.Logf("hammer: %d sessions, %d hosts and %d views each over %d cycles: %d sent, %d received, %d refused, %d handshakes dropped as slow",
		c.Sessions, 1, c.Views, c.Cycles, st.Sent.Load(), st.Received.Load(), st.Refused.Load(), st.Dropped.Load())
	if st.Received.Load() == 0 {
		t.Fatal("nothing was relayed")
	}
}
