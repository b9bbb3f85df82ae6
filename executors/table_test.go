package executors

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"testing"

	"github.com/airlock/airlock/executors/testkit"
	"github.com/airlock/airlock/executors/wire"
)

func TestTable(t *testing.T) {
	r := newRuntime(t, Config{})
	tab := NewTable()
	c := wire.Call{V: 1, CallID: "c1", Tool: "echo", DescriptorID: "guest", Args: json.RawMessage(`{}`)}

	a := tab.Call(context.Background(), c)
	mustParse(t, a)
	wantRule(t, a, wire.UnattributedCall)
	if a.Budget != nil {
		t.Fatalf("unattributed-call carries a budget: %+v", a.Budget)
	}

	p1 := load(t, r, guestDescriptor("guest", defaultBounds()), testkit.Fixture(t, "guest-reactor.wasm"))
	c.BoundsEcho = p1.d.Bounds.Canonical()
	if old := tab.Put(p1); old != nil {
		t.Fatal("Put into an empty table returned an old program")
	}
	if got, ok := tab.Get("guest"); !ok || got != p1 {
		t.Fatal("Get did not return the program")
	}
	if a := tab.Call(context.Background(), c); !a.OK {
		t.Fatalf("routed call answered %+v", a)
	}

	p2 := load(t, r, guestDescriptor("guest", defaultBounds()), testkit.Fixture(t, "silent.wasm"))
	if old := tab.Put(p2); old != p1 {
		t.Fatal("Put did not return the replaced program")
	}
	wantRule(t, tab.Call(context.Background(), c), wire.ExecThrew) // silent.wasm answers nothing
	pa := load(t, r, guestDescriptor("alpha", defaultBounds()), testkit.Fixture(t, "silent.wasm"))
	tab.Put(pa)
	ds := tab.Descriptors()
	if len(ds) != 2 || ds[0].DescriptorID != "alpha" || ds[1].DescriptorID != "guest" {
		t.Fatalf("Descriptors not sorted by id: %+v", ds)
	}
	if got := tab.Remove("guest"); got != p2 {
		t.Fatal("Remove did not return the program")
	}
	if tab.Remove("guest") != nil {
		t.Fatal("second Remove returned a program")
	}
	wantRule(t, tab.Call(context.Background(), c), wire.UnattributedCall)
	bad := c
	bad.CallID = ""
	a = tab.Call(context.Background(), bad)
	mustParse(t, a)
}

// TestTableConcurrent exercises readers against writers under -race.
func TestTableConcurrent(t *testing.T) {
	r := newRuntime(t, Config{})
	tab := NewTable()
	var progs []*Program
	for i := range 4 {
		progs = append(progs, load(t, r, guestDescriptor(fmt.Sprintf("d%d", i), defaultBounds()), testkit.Fixture(t, "silent.wasm")))
	}
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Add(2)
		go func() {
			defer wg.Done()
			for i := range 200 {
				p := progs[(i+w)%len(progs)]
				if i%3 == 0 {
					tab.Remove(p.d.DescriptorID)
				} else {
					tab.Put(p)
				}
			}
		}()
		go func() {
			defer wg.Done()
			for i := range 200 {
				tab.Get(fmt.Sprintf("d%d", i%4))
				tab.Descriptors()
				tab.Call(context.Background(), wire.Call{CallID: "c", Tool: "nope", DescriptorID: "d1", Args: json.RawMessage(`{}`)})
			}
		}()
	}
	wg.Wait()
}
