// Package baseline runs a module with plain wazero and nothing of Airlock:
// the yardstick for performance figures. The executors' benchmarks and
// `airlock load calls` measure Airlock against it in the same run, so a
// figure is a ratio to what the module costs anyway.
//
// It does the least that still runs a tool of the module ABI
// (plugins/sdk/ABI.md): a reactor gets a fresh instance per call
// (instantiate, _initialize, airlock_alloc, airlock_call) or one instance
// reused for every call; a command is instantiated per call with the tool
// as argv[0], the args on stdin and the observation read from stdout.
// Roots are mounted with wazero's own read-only directory mount. There
// are no bounds, no schema, no pool and no check of the output.
package baseline

import (
	"bytes"
	"context"
	"errors"
	"fmt"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/imports/wasi_snapshot_preview1"

	"github.com/airlock/airlock/config/datadir"
)

// Style is how the module is run, decided from its exports as the broker
// decides it: _start makes a command (even beside _initialize), the
// reactor exports make a reactor.
type Style string

// The two styles of plugins/sdk/ABI.md.
const (
	Command Style = "command"
	Reactor Style = "reactor"
)

// Options are what a module needs from its host besides WASI.
type Options struct {
	// Roots maps a root name to a host directory, mounted read-only at
	// /NAME as the broker mounts a descriptor's bounds.roots.
	Roots map[string]string
	// CacheDir is a wazero compilation cache directory, "" for none.
	// Given the broker's own, a module the broker has compiled is not
	// compiled again (the cache key covers the module, wazero's version,
	// the CPU and the runtime's close-on-context-done, which both set).
	CacheDir string
}

// Runner is one compiled module on its own wazero runtime. Call is safe
// for concurrent use.
type Runner struct {
	rt       wazero.Runtime
	cache    wazero.CompilationCache // nil without Options.CacheDir
	compiled wazero.CompiledModule
	config   wazero.ModuleConfig
	style    Style
}

// New compiles module on a fresh runtime with WASI (and, if the module
// imports it, a stub of the airlock host module). Compilation takes
// seconds for a Go-built module; do it before timing anything.
func New(ctx context.Context, module []byte, o Options) (*Runner, error) {
	rc := wazero.NewRuntimeConfig().WithCloseOnContextDone(true)
	var cache wazero.CompilationCache
	if o.CacheDir != "" {
		// The same checks as the broker's cache (internal/datadir).
		rep, err := datadir.PrepareCache(o.CacheDir)
		if err != nil {
			return nil, fmt.Errorf("baseline: %w", err)
		}
		c, err := wazero.NewCompilationCacheWithDir(rep.Dir)
		if err != nil {
			return nil, fmt.Errorf("baseline: cache dir: %w", err)
		}
		cache, rc = c, rc.WithCompilationCache(c)
	}
	rt := wazero.NewRuntimeWithConfig(ctx, rc)
	r, err := setup(ctx, rt, module, o)
	if err != nil {
		_ = rt.Close(ctx)
		if cache != nil {
			_ = cache.Close(ctx)
		}
		return nil, fmt.Errorf("baseline: %w", err)
	}
	r.cache = cache
	return r, nil
}

func setup(ctx context.Context, rt wazero.Runtime, module []byte, o Options) (*Runner, error) {
	if _, err := wasi_snapshot_preview1.Instantiate(ctx, rt); err != nil {
		return nil, err
	}
	compiled, err := rt.CompileModule(ctx, module)
	if err != nil {
		return nil, err
	}
	if err := instantiateStubs(ctx, rt, compiled); err != nil {
		return nil, err
	}
	style, err := detectStyle(compiled)
	if err != nil {
		return nil, err
	}
	fs := wazero.NewFSConfig()
	for name, dir := range o.Roots {
		fs = fs.WithReadOnlyDirMount(dir, "/"+name)
	}
	cfg := wazero.NewModuleConfig().WithName("").WithFSConfig(fs).WithSysWalltime().WithSysNanotime()
	if style == Reactor {
		cfg = cfg.WithStartFunctions(exportInitialize)
	}
	return &Runner{rt: rt, compiled: compiled, config: cfg, style: style}, nil
}

func detectStyle(compiled wazero.CompiledModule) (Style, error) {
	exports := compiled.ExportedFunctions()
	if _, ok := exports["_start"]; ok {
		return Command, nil
	}
	for _, name := range []string{exportInitialize, exportAlloc, exportCall} {
		if _, ok := exports[name]; !ok {
			return "", ErrNoStyle
		}
	}
	return Reactor, nil
}

// Style is the module's style.
func (r *Runner) Style() Style { return r.style }

// Call runs tool once on a fresh instance and returns the observation:
// the reactor's result after its status byte, or the command's stdout.
// The instance is closed before Call returns.
func (r *Runner) Call(ctx context.Context, tool string, args []byte) ([]byte, error) {
	var out []byte
	var err error
	if r.style == Command {
		out, err = r.command(ctx, tool, args)
	} else {
		out, err = r.reactorOnce(ctx, tool, args)
	}
	if err != nil {
		return nil, fmt.Errorf("baseline: %s: %w", tool, err)
	}
	return out, nil
}

// command instantiates the module, which runs _start to its exit.
func (r *Runner) command(ctx context.Context, tool string, args []byte) ([]byte, error) {
	var stdout bytes.Buffer
	cfg := r.config.WithArgs(tool).WithStdin(bytes.NewReader(args)).WithStdout(&stdout)
	mod, err := r.rt.InstantiateModule(ctx, r.compiled, cfg)
	if mod != nil {
		_ = mod.Close(ctx)
	}
	return stdout.Bytes(), err
}

func (r *Runner) reactorOnce(ctx context.Context, tool string, args []byte) ([]byte, error) {
	inst, err := r.instantiate(ctx)
	if err != nil {
		return nil, err
	}
	defer inst.mod.Close(ctx)
	return inst.invoke(ctx, tool, args)
}

// Close frees the runtime, every instance still open and the cache at
// once, cutting calls still running; there is nothing to wait for.
func (r *Runner) Close(ctx context.Context) error {
	err := r.rt.Close(ctx)
	if r.cache != nil {
		err = errors.Join(err, r.cache.Close(ctx))
	}
	if err != nil {
		return fmt.Errorf("baseline: close: %w", err)
	}
	return nil
}
