// Package localclienttest drives a broker through localclient for tests.
// Churn works a broker's sessions with many hosts and views at once:
// hosts connect and reconnect, relay ordered state and answer every
// request; views make requests, cancel some, ask for snapshots, leave with
// requests in flight, and check that hostSequence strictly increases
// within each host epoch. The hammer tests run it in process and against
// the real binary, then check that everything drained.
//
// Only tests import it (a test of executors/testkit checks the binary
// does not link it); it is not internal because cmd/airlock's tests use
// it too (RATIONALE.md, "Why are the test kits exported packages, the
// shared one under `executors/`?").
package localclienttest

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/airlock/airlock/broker/contract"
	"github.com/airlock/airlock/broker/localclient"
)

// ChurnLoad is the workload: Sessions sessions, each with one host and Views
// views, each connecting Cycles times; a host sends Messages ordered
// states per cycle, a view Messages/2 requests.
type ChurnLoad struct {
	Sessions, Views, Cycles, Messages int
	// TTLSeconds is the sessions' time to live (0: the broker's default).
	TTLSeconds int64
	// OnSecret, when set, is given every secret the churn receives
	// (credentials and cookie keys), so a test can check none leaks.
	OnSecret func(string)
}

// ChurnStats counts what the churn saw. Dropped counts handshakes cut short
// because the broker dropped the socket as a slow consumer, or refused a
// view's join while the host was behind (host-busy): on a starved
// machine a peer may not read fast enough even while saying hello, and
// dropping it is what the broker must do so the session never stalls.
type ChurnStats struct {
	Sent, Received, Refused, Dropped atomic.Int64
}

// slowConsumer reports whether err is the broker closing the socket
// because a side is not keeping up: 1013 "slow-consumer" (this socket),
// or, for a view's join, 1013 "host-busy" (the host's queue is past the
// views' share; the view may come again).
func slowConsumer(err error) bool {
	code, reason := localclient.CloseStatus(err)
	return code == contract.CloseTryAgainLater && (reason == contract.ReasonSlowConsumer || reason == contract.ReasonHostBusy)
}

// Churn mints and bootstraps l.Sessions sessions for origin through client
// and churns them until every actor is done. It returns the actors'
// errors, an ordering violation among them.
func Churn(ctx context.Context, client *localclient.Client, origin string, l ChurnLoad, st *ChurnStats) error {
	var wg sync.WaitGroup
	errs := make(chan error, l.Sessions*(l.Views+1))
	for s := range l.Sessions {
		m, err := client.Mint(ctx, localclient.MintOptions{LaunchOrigin: origin, TTLSeconds: l.TTLSeconds, CanProposeSourceEdits: s%2 == 0})
		if err != nil {
			return fmt.Errorf("churn: mint: %w", err)
		}
		ck, _, err := client.Bootstrap(ctx, origin, m.WorkspaceSessionID, m.ViewCredential)
		if err != nil {
			return fmt.Errorf("churn: bootstrap: %w", err)
		}
		if l.OnSecret != nil {
			l.OnSecret(m.ViewCredential)
			l.OnSecret(m.HostCookieKey)
			l.OnSecret(ck.Cookie.Value)
			l.OnSecret(ck.Key)
		}
		wg.Add(1)
		go func() { defer wg.Done(); errs <- hostActor(ctx, client.Base, m, l, st) }()
		for v := range l.Views {
			wg.Add(1)
			go func() { defer wg.Done(); errs <- viewActor(ctx, client.Base, m, ck, l, v, st) }()
		}
	}
	wg.Wait()
	close(errs)
	var all []error
	for err := range errs {
		all = append(all, err)
	}
	return errors.Join(all...)
}

// hostActor connects (again and again), broadcasts ordered state and
// answers whatever requests reach it.
func hostActor(ctx context.Context, base string, m *localclient.Minted, l ChurnLoad, st *ChurnStats) error {
	for cycle := range l.Cycles {
		conn, err := localclient.DialHost(ctx, base, m)
		if err != nil {
			return err
		}
		if _, err := conn.Hello(ctx); err != nil {
			conn.Close()
			var pe *localclient.ProtocolError
			if errors.As(err, &pe) && pe.Code == contract.HostAlreadyConnected {
				continue
			}
			if slowConsumer(err) {
				st.Dropped.Add(1)
				continue
			}
			return fmt.Errorf("host hello: %w", err)
		}
		done := make(chan struct{})
		go func() { defer close(done); answer(ctx, conn, st) }()
		for i := range l.Messages {
			if err := conn.Send(ctx, "focusNode", map[string]any{"cycle": cycle, "i": i}, int64(i+1)); err != nil {
				break
			}
			st.Sent.Add(1)
		}
		conn.Close()
		<-done
	}
	return nil
}

// answer replies to requests and snapshot asks until the socket closes.
func answer(ctx context.Context, conn *localclient.Conn, st *ChurnStats) {
	results := map[string]string{"validateRequest": "validateResult", "exportRequest": "exportResult",
		"captureInspectRequest": "captureInspectResult", "sourceEditRequest": "sourceEditResult"}
	for {
		msg, err := conn.Receive(ctx)
		if err != nil {
			return
		}
		st.Received.Add(1)
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
			st.Refused.Add(1)
		}
	}
}

// viewActor connects, sends requests, cancels some, asks for snapshots,
// leaves with requests in flight, and checks that hostSequence strictly
// increases within each host epoch.
func viewActor(ctx context.Context, base string, m *localclient.Minted, ck *localclient.ViewPass, l ChurnLoad, n int, st *ChurnStats) error {
	kinds := []string{"validateRequest", "exportRequest", "captureInspectRequest", "sourceEditRequest"}
	for cycle := range l.Cycles {
		conn, err := localclient.DialView(ctx, base, m.LaunchOrigin, m.WorkspaceSessionID, ck)
		if err != nil {
			return err
		}
		hello, err := conn.Hello(ctx)
		if err != nil {
			conn.Close()
			if slowConsumer(err) {
				st.Dropped.Add(1)
				continue
			}
			return fmt.Errorf("view hello: %w", err)
		}
		done := make(chan error, 1)
		go func() { done <- checkOrder(ctx, conn, st) }()
		for i := range l.Messages / 2 {
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
			st.Sent.Add(1)
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

func checkOrder(ctx context.Context, conn *localclient.Conn, st *ChurnStats) error {
	epoch, last := -1.0, int64(0)
	for {
		msg, err := conn.Receive(ctx)
		if err != nil {
			return nil
		}
		st.Received.Add(1)
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
			st.Refused.Add(1)
		}
	}
}
