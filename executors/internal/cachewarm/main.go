// Command cachewarm compiles wasm modules into a compilation cache folder
// through executors.Runtime, so with the very configuration the executors
// use. The executors tests build it without -race and run it from their
// TestMain: wazero's compiler is an order of magnitude slower under the
// race detector, and a compiled module is keyed by the module and the CPU,
// not by how the compiler was built, so the race-enabled tests then load
// each fixture from the cache instead of compiling it. Errors of
// admission (a fixture that is meant to be refused) do not matter here:
// the module is compiled, and cached, before its imports are judged.
//
// Usage: cachewarm CACHE_DIR MODULE.wasm...
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/airlock/airlock/executors"
	"github.com/airlock/airlock/executors/wire"
)

func main() {
	if len(os.Args) < 3 {
		fmt.Fprintln(os.Stderr, "usage: cachewarm CACHE_DIR MODULE.wasm...")
		os.Exit(2)
	}
	ctx := context.Background()
	rt, err := executors.NewRuntime(ctx, executors.Config{CacheDir: os.Args[1]})
	if err != nil {
		fmt.Fprintln(os.Stderr, "cachewarm:", err)
		os.Exit(1)
	}
	defer rt.Close(ctx)
	bounds := wire.Bounds{TimeoutMs: 1000, MemoryMiB: 64, MaxOutputBytes: 1024, AllowedHosts: []string{}, Roots: []string{}}
	for _, path := range os.Args[2:] {
		module, err := os.ReadFile(path)
		if err != nil {
			fmt.Fprintln(os.Stderr, "cachewarm:", err)
			os.Exit(1)
		}
		id := strings.TrimSuffix(filepath.Base(path), ".wasm")
		d := wire.Descriptor{DescriptorID: id, Bounds: bounds,
			Tools: []wire.Tool{{Name: "x", InputSchema: json.RawMessage(`{"type":"object"}`)}}}
		if p, err := rt.Load(ctx, d, module); err == nil {
			_ = p.Close(ctx)
		}
	}
}
