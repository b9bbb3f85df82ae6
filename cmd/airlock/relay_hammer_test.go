package main

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/airlock/airlock/broker/localclient"
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
	c := churn{Sessions: 6, Views: 5, Cycles: 3, Messages: 40}
	var st hammerStats
	var wg sync.WaitGroup
	errs := make(chan error, 256)
	for s := range c.Sessions {
		m := p.mintFor(t, localclient.MintOptions{TTLSeconds: 8, CanProposeSourceEdits: s%2 == 0})
		ck := p.bootstrap(t, m)
		wg.Add(1)
		go func() { defer wg.Done(); errs <- hostActor(p.URL(), m, c, &st) }()
		for v := range c.Views {
			wg.Add(1)
			go func() { defer wg.Done(); errs <- viewActor(p.URL(), m, ck, c, v, &st) }()
		}
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Error(err)
		}
	}
	if st.received.Load() == 0 {
		t.Fatal("nothing was relayed")
	}
	eventuallyE2E(t, "every socket closes", func() bool {
		return p.metric(t, `airlock_ws_connections{endpoint="ws",role="host"}`) == 0 &&
			p.metric(t, `airlock_ws_connections{endpoint="ws",role="view"}`) == 0
	})
	eventuallyE2E(t, "the broker's goroutines return to the baseline", func() bool {
		return p.metric(t, "go_goroutines") <= baseline
	})
	eventuallyE2E(t, "every session expires and is reaped", func() bool {
		return p.metric(t, `airlock_sessions{state="live"}`) == 0 && p.metric(t, `airlock_sessions{state="tombstone"}`) == 0
	})
	t.Logf("e2e hammer: %d sessions × (1 host + %d views) × %d cycles: %d sent, %d received, %d refused; goroutines back to %v",
		c.Sessions, c.Views, c.Cycles, st.sent.Load(), st.received.Load(), st.refused.Load(), baseline)
}

type churn struct{ Sessions, Views, Cycles, Messages int }

type hammerStats struct{ sent, received, refused atomic.Int64 }

func hostActor(base string, m *localclient.Minted, c churn, st *hammerStats) error {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	for cycle := range c.Cycles {
		conn, err := localclient.DialHost(ctx, base, m)
		if err != nil {
			return err
		}
		if _, err := conn.Hello(ctx); err != nil {
			conn.Close()
			var pe *localclient.ProtocolError
			if errors.As(err, &pe) && pe.Code == "HOST_ALREADY_CONNECTED" {
				continue
			}
			return fmt.Errorf("host hello: %w", err)
		}
		done := make(chan struct{})
		go func() { defer close(done); answer(ctx, conn, st) }()
		for i := range c.Messages {
			if err := conn.Send(ctx, "focusNode", map[string]any{"cycle": cycle, "i": i}, int64(i+1)); err != nil {
				break
			}
			st.sent.Add(1)
		}
		conn.Close()
		<-done
	}
	return nil
}

// answer replies to requests and snapshot asks until the socket closes.
func answer(ctx context.Context, conn *localclient.Conn, st *hammerStats) {
	results := map[string]string{"validateRequest": "validateResult", "exportRequest": "exportResult",
		"captureInspectRequest": "captureInspectResult", "sourceEditRequest": "sourceEditResult"}
	for {
		msg, err := conn.Receive(ctx)
		if err != nil {
			return
		}
		st.received.Add(1)
		var p map[string]any
		_ = msg.Decode(&p)
		switch {
		case msg.Type == "snapshotRequest":
			_ = conn.Send(ctx, "snapshot", map[string]any{"atHostSequence": 0, "state": map[string]any{}}, 0)
		case results[msg.Type] != "":
			_ = conn.Send(ctx, results[msg.Type], map[string]any{"requestId": p["requestId"], "target": p["target"]}, 0)
		case msg.Type == "candidateRequest":
			_ = conn.Send(ctx, "candidateResult", map[string]any{"requestId": p["requestId"], "viewId": p["viewId"]}, 0)
		case msg.Type == "error":
			st.refused.Add(1)
		}
	}
}

// viewActor connects, sends requests, cancels some, asks for snapshots,
// leaves with requests in flight, and checks that hostSequence strictly
// increases within each host epoch.
func viewActor(base string, m *localclient.Minted, ck *http.Cookie, c churn, n int, st *hammerStats) error {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	kinds := []string{"validateRequest", "exportRequest", "captureInspectRequest", "sourceEditRequest"}
	for cycle := range c.Cycles {
		conn, err := localclient.DialView(ctx, base, m.LaunchOrigin, m.WorkspaceSessionID, ck)
		if err != nil {
			return err
		}
		hello, err := conn.Hello(ctx)
		if err != nil {
			conn.Close()
			return fmt.Errorf("view hello: %w", err)
		}
		done := make(chan error, 1)
		go func() { done <- checkOrder(ctx, conn, st) }()
		for i := range c.Messages / 2 {
			id := fmt.Sprintf("v%d-c%d-%d", n, cycle, i)
			kind := kinds[i%len(kinds)]
			_ = conn.Send(ctx, kind, map[string]any{"requestId": id, "target": i}, 0)
			if i%3 == 0 {
				_ = conn.Send(ctx, kind[:len(kind)-len("Request")]+"Cancel", map[string]any{"requestId": id, "target": i}, 0)
			}
			if i%5 == 0 {
				_ = conn.Send(ctx, "snapshotRequest", map[string]any{"lastHostSequence": nil}, 0)
				_ = conn.Send(ctx, "candidateRequest", map[string]any{"requestId": id + "c", "viewId": hello.ViewID}, 0)
			}
			st.sent.Add(1)
		}
		if cycle%2 == 0 {
			conn.CloseNow() // leave abruptly, requests in flight
		} else {
			conn.Close()
		}
		if err := <-done; err != nil {
			return err
		}
	}
	return nil
}

func checkOrder(ctx context.Context, conn *localclient.Conn, st *hammerStats) error {
	epoch, last := -1.0, int64(0)
	for {
		msg, err := conn.Receive(ctx)
		if err != nil {
			return nil
		}
		st.received.Add(1)
		switch msg.Type {
		case "connectionState":
			var p struct {
				HostEpoch float64 `json:"hostEpoch"`
			}
			_ = msg.Decode(&p)
			if p.HostEpoch != epoch {
				epoch, last = p.HostEpoch, 0
			}
		case "focusNode":
			if msg.HostSequence <= last {
				return fmt.Errorf("epoch %v: hostSequence %d after %d", epoch, msg.HostSequence, last)
			}
			last = msg.HostSequence
		case "error":
			st.refused.Add(1)
		}
	}
}
