package executors

import (
	"context"
	"encoding/json"
	"sync"
	"testing"

	"github.com/airlock/airlock/executors/testkit"
	"github.com/airlock/airlock/executors/wire"
)

var (
	fuzzOnce    sync.Once
	fuzzRuntime *Runtime
	fuzzProgram *Program
)

// FuzzCall feeds arbitrary call fields to Program.Call on the echo
// fixture: it must never panic, every answer must be a valid envelope,
// and an observation must be exactly the compacted args.
func FuzzCall(f *testing.F) {
	canon := string(defaultBounds().Canonical())
	f.Add("c1", "echo", `{"a":1}`, canon)
	f.Add("c1", "echo", `{"a":[1,2,{"b":null}],"s":"\u00e9"}`, canon)
	f.Add("c2", "echo", `{"a":1,"a":2}`, canon)
	f.Add("c3", "echo", "{\"s\":\"\xff\"}", canon)
	f.Add("c4", "echo", `[]`, canon)
	f.Add("c5", "nope", `{}`, canon)
	f.Add("c6", "echo", `{}`, `{"timeoutMs":1}`)
	f.Add("", "echo", `{}`, canon)
	f.Add("c7", "echo", `{"n":1e400}`, canon)
	f.Add("c8", "trap", `{}`, canon)
	f.Add("c9", "echo", `{"deep":[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]}`, canon)
	f.Add("c\x00", "echo", `{}`, canon)
	f.Add("c10", "echo", ``, canon)
	f.Add("c11", "echo", `{"":"&<>"}`, canon)
	f.Fuzz(func(t *testing.T, callID, tool, args, echo string) {
		p := fuzzTarget(t)
		a := p.Call(context.Background(), wire.Call{V: 1, CallID: callID, Tool: tool, DescriptorID: "guest",
			Args: json.RawMessage(args), BoundsEcho: json.RawMessage(echo)})
		data, err := json.Marshal(a)
		if err != nil {
			t.Fatalf("answer does not marshal: %v", err)
		}
		if _, err := wire.ParseAnswer(data); err != nil {
			t.Fatalf("answer %s does not parse: %v", data, err)
		}
		if a.OK && tool == "echo" {
			if args == "" {
				args = "{}" // absent args are the empty object
			}
			want, err := wire.CompactMember([]byte(args))
			if err != nil || string(a.Observed) != string(want) {
				t.Fatalf("echo of %q observed %s", args, a.Observed)
			}
		}
	})
}

// fuzzTarget loads the reactor echo fixture once per process; the fuzz
// engine calls the target many times and compiling per call is too slow.
// TestMain closes the runtime (and so the program) after the run.
func fuzzTarget(t *testing.T) *Program {
	fuzzOnce.Do(func() {
		r, err := NewRuntime(context.Background(), Config{CacheDir: sharedCache})
		if err != nil {
			t.Fatal(err)
		}
		d := guestDescriptor("guest", defaultBounds())
		p, err := r.Load(context.Background(), d, testkit.Fixture(t, "guest-reactor.wasm"))
		if err != nil {
			t.Fatal(err)
		}
		fuzzRuntime, fuzzProgram = r, p
	})
	if fuzzProgram == nil {
		t.Fatal("fuzz target failed to load")
	}
	return fuzzProgram
}
