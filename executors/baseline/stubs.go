package baseline

import (
	"context"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
)

// hostModule is the import module of the broker's host functions.
const hostModule = "airlock"

// instantiateStubs gives a module that imports the airlock host module
// the cheapest stand-in, so a tool that merely logs still runs: log
// drops the line, fetch ends the call with ErrNoFetch (a baseline that
// went to the network would measure the network). A module that imports
// nothing from it gets nothing.
func instantiateStubs(ctx context.Context, rt wazero.Runtime, compiled wazero.CompiledModule) error {
	imported := false
	for _, f := range compiled.ImportedFunctions() {
		if mod, _, _ := f.Import(); mod == hostModule {
			imported = true
		}
	}
	if !imported {
		return nil
	}
	i32 := api.ValueTypeI32
	b := rt.NewHostModuleBuilder(hostModule)
	b.NewFunctionBuilder().
		WithGoModuleFunction(api.GoModuleFunc(noFetch), []api.ValueType{i32, i32}, []api.ValueType{i32}).
		Export("fetch")
	b.NewFunctionBuilder().
		WithGoModuleFunction(api.GoModuleFunc(noFetch), []api.ValueType{i32, i32}, []api.ValueType{i32}).
		Export("fetch_read")
	b.NewFunctionBuilder().
		WithGoModuleFunction(api.GoModuleFunc(func(context.Context, api.Module, []uint64) {}), []api.ValueType{i32, i32}, nil).
		Export("log")
	_, err := b.Instantiate(ctx)
	return err
}

// noFetch ends the call: wazero turns a host function's panic into the
// call's error.
func noFetch(context.Context, api.Module, []uint64) { panic(ErrNoFetch) }
