package plugins_test

import (
	"context"
	"encoding/json"
	"errors"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/airlock/airlock/executors/testkit"
	"github.com/airlock/airlock/executors/wire"
	"github.com/airlock/airlock/plugins"
)

// stackHas reports whether any goroutine's stack mentions fn.
func stackHas(fn string) bool {
	buf := make([]byte, 1<<20)
	return strings.Contains(string(buf[:runtime.Stack(buf, true)]), fn)
}

// TestCloseForcesWhenItsContextEnds: a call still running when Close's
// context ends does not hold the catalog's goroutines: Close returns the
// context's cause with none of them left, and the call ends by its own
// timeout.
func TestCloseForcesWhenItsContextEnds(t *testing.T) {
	e := newEnv(t, nil, nil)
	m := guestManifest("fx")
	m.Bounds.TimeoutMs = 1000
	m.Tools = append(m.Tools, wire.Tool{Name: "loop", Description: "spin", InputSchema: json.RawMessage(`{"type":"object"}`)})
	if err := plugins.WriteFolder(e.dir, m, testkit.Fixture(t, "guest.wasm")); err != nil {
		t.Fatal(err)
	}
	e.cat.Scan(context.Background())
	answered := make(chan wire.Answer, 1)
	go func() { answered <- e.call("fx", "loop", `{}`) }()
	testkit.Eventually(t, "the call to be inside the guest", func() bool { return stackHas("tetratelabs/wazero") })
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if err := e.cat.Close(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Close = %v, want the context's deadline", err)
	}
	if stackHas("plugins.(*Catalog).closeLater") {
		t.Error("a retirement goroutine outlived Close")
	}
	if a := <-answered; a.Refused != wire.ExecTimeout {
		t.Errorf("the spinning call: %+v", a)
	}
}
