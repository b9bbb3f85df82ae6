package envclient_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"runtime"
	"sync"
	"testing"

	"github.com/airlock/airlock/broker/channel/envclient"
	"github.com/airlock/airlock/executors/testkit"
	"github.com/airlock/airlock/executors/wire"
)

// goroutineID reads the calling goroutine's id from its stack header
// ("goroutine 42 [running]:").
func goroutineID() int {
	var buf [64]byte
	n := runtime.Stack(buf[:], false)
	var id int
	_, _ = fmt.Sscanf(string(bytes.TrimPrefix(buf[:n], []byte("goroutine "))), "%d", &id)
	return id
}

// workerExecutor records the goroutine each call runs on; "block" waits
// for release.
type workerExecutor struct {
	*executor
	mu   sync.Mutex
	ran  map[string]int // callId → goroutine
	hold chan struct{}
}

func (e *workerExecutor) Call(ctx context.Context, c wire.Call) wire.Answer {
	var args struct{ Name string }
	_ = json.Unmarshal(c.Args, &args) // the broker rewrote callId: the name is in args
	e.mu.Lock()
	e.ran[args.Name] = goroutineID()
	e.mu.Unlock()
	if c.Tool == "block" {
		e.started <- struct{}{}
		<-e.hold
	}
	return wire.Observed(c.CallID, json.RawMessage(`{}`), nil)
}

func (e *workerExecutor) on(id string) int {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.ran[id]
}

// named makes a call through b whose args carry name.
func named(b *broker, name, tool string) wire.Answer {
	rt, _ := b.ch.Lookup("fx")
	return b.router.Call(context.Background(), wire.Call{V: 1, CallID: name, Tool: tool, DescriptorID: "fx",
		Args: json.RawMessage(`{"name":"` + name + `"}`), BoundsEcho: rt.Descriptor.Bounds.Canonical()})
}

// TestClientReusesWorkers: a call runs on a worker an earlier call left
// idle, and a burst leaves at most 16 workers behind: of a second burst's
// calls, at most 16 run on the first burst's goroutines.
func TestClientReusesWorkers(t *testing.T) {
	b := newBroker(t)
	ex := &workerExecutor{executor: newExecutor("fx"), ran: map[string]int{}, hold: make(chan struct{})}
	ex.started = make(chan struct{}, 64)
	_, stop := run(t, envclient.Options{URL: b.url(), Bearer: bearerOf(b.pair(t, "lab")), Executor: ex, Catalog: ex.Descriptors})
	testkit.Eventually(t, "the catalog", func() bool { return b.routed("fx") })

	seen := map[int]bool{}
	n := 0
	testkit.Eventually(t, "a call on a worker an earlier call ran on", func() bool {
		n++
		id := fmt.Sprintf("s%d", n)
		if a := named(b, id, "echo"); !a.OK {
			t.Fatalf("echo: %+v", a)
		}
		g := ex.on(id)
		if g == 0 {
			t.Fatalf("call %s did not run", id)
		}
		if seen[g] {
			return true
		}
		seen[g] = true
		return false
	})

	burst := func(name string, size int) []int {
		var wg sync.WaitGroup
		for i := range size {
			wg.Add(1)
			go func() {
				defer wg.Done()
				if a := named(b, fmt.Sprintf("%s%d", name, i), "block"); !a.OK {
					t.Errorf("block: %+v", a)
				}
			}()
		}
		for range size {
			<-ex.started // every call of the burst holds its worker
		}
		gs := make([]int, size)
		for i := range size {
			gs[i] = ex.on(fmt.Sprintf("%s%d", name, i))
		}
		for range size {
			ex.hold <- struct{}{}
		}
		wg.Wait()
		return gs
	}
	first := map[int]bool{}
	for _, g := range burst("a", 40) {
		first[g] = true
	}
	if len(first) != 40 {
		t.Fatalf("40 calls held at once ran on %d goroutines", len(first))
	}
	again := 0
	for _, g := range burst("b", 40) {
		if first[g] {
			again++
		}
	}
	if again > 16 {
		t.Errorf("%d of the second burst's calls ran on the first burst's workers: more than 16 stayed idle", again)
	}
	if err := stop(); err != nil {
		t.Fatalf("Run: %v", err)
	}
}
