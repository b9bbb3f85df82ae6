// Package executors runs tool modules in a wazero sandbox: Load admits a
// module for a descriptor, Program.Call runs one call under the
// descriptor's bounds and answers with a wire.Answer, and Table routes
// calls by descriptorId. Its design decisions are in the RATIONALE.md
// beside it.
package executors

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"sync"
	"sync/atomic"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
	"github.com/tetratelabs/wazero/imports/wasi_snapshot_preview1"

	"github.com/airlock/airlock/config/datadir"
	"github.com/airlock/airlock/config/plugincfg"
	"github.com/airlock/airlock/executors/wire"
)

// Config is the operator's side of the executors; the descriptor's bounds
// are the plugin's side. A zero field takes the default the broker's
// configuration uses.
type Config struct {
	CacheDir       string            // wazero compilation cache dir; "" = no disk cache
	Roots          map[string]string // root name -> host directory
	MaxConcurrent  int               // calls running at once per descriptor (overloaded past it)
	MaxFetchBytes  int               // largest response body one fetch may read
	MaxStderrBytes int               // guest stderr kept per call for the log
	PoolSize       int               // idle reactor instances kept per descriptor
	// PluginConfig is the operator's values for config_get; nil for none.
	// SetPluginConfig replaces it.
	PluginConfig *plugincfg.Values
	Logger       *slog.Logger
}

// Defaults for zero Config fields, equal to the broker's config defaults.
const (
	DefaultMaxConcurrent  = 16
	DefaultMaxFetchBytes  = 8 << 20
	DefaultMaxStderrBytes = 64 << 10
	DefaultPoolSize       = 4
)

func (c *Config) withDefaults() error {
	fields := []*int{&c.MaxConcurrent, &c.MaxFetchBytes, &c.MaxStderrBytes, &c.PoolSize}
	defaults := []int{DefaultMaxConcurrent, DefaultMaxFetchBytes, DefaultMaxStderrBytes, DefaultPoolSize}
	for i, f := range fields {
		if *f < 0 {
			return fmt.Errorf("%w: negative limit", ErrConfig)
		}
		if *f == 0 {
			*f = defaults[i]
		}
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	roots := make(map[string]string, len(c.Roots))
	for k, v := range c.Roots {
		roots[k] = v
	}
	c.Roots = roots
	return nil
}

// Runtime is one wazero runtime shared by every descriptor: compiled code,
// the WASI and airlock host modules and the fetch transport are made once.
type Runtime struct {
	cfg       Config
	wz        wazero.Runtime
	cache     wazero.CompilationCache
	hostFuncs map[string]map[string]api.FunctionDefinition // module -> name -> definition
	transport *http.Transport
	// values is what config_get reads; a call takes it once, at its first
	// config_get, so one call never sees two versions.
	values atomic.Pointer[plugincfg.Values]

	// compiles admits one module compilation at a time (each on
	// compileWorkers goroutines); compiling counts the compilations not
	// yet ended, which the engine must outlive.
	compiles  compileQueue
	compiling sync.WaitGroup

	mu       sync.Mutex
	closed   bool
	programs map[*Program]struct{}
}

// NewRuntime starts the shared wazero runtime. It compiles nothing yet.
func NewRuntime(ctx context.Context, cfg Config) (*Runtime, error) {
	if err := cfg.withDefaults(); err != nil {
		return nil, err
	}
	rc := wazero.NewRuntimeConfig().WithCloseOnContextDone(true)
	var cache wazero.CompilationCache
	if cfg.CacheDir != "" {
		dir, err := PrepareCache(cfg.CacheDir, cfg.Logger)
		if err != nil {
			return nil, fmt.Errorf("%w: %w", ErrConfig, err)
		}
		c, err := wazero.NewCompilationCacheWithDir(dir)
		if err != nil {
			return nil, fmt.Errorf("%w: cache dir: %v", ErrConfig, err)
		}
		cache = c
		rc = rc.WithCompilationCache(cache)
	}
	r := &Runtime{cfg: cfg, wz: wazero.NewRuntimeWithConfig(ctx, rc), cache: cache,
		transport: newTransport(), programs: map[*Program]struct{}{}}
	r.SetPluginConfig(cfg.PluginConfig)
	if err := r.instantiateHosts(ctx); err != nil {
		_ = r.closeWazero(ctx)
		return nil, err
	}
	return r, nil
}

// SetPluginConfig makes v what config_get answers from, for calls that
// have not read a value yet; calls that have keep theirs. nil holds no
// values.
func (r *Runtime) SetPluginConfig(v *plugincfg.Values) {
	if v == nil {
		v = &plugincfg.Values{}
	}
	r.values.Store(v)
}

// PluginConfig is what config_get answers from now.
func (r *Runtime) PluginConfig() *plugincfg.Values { return r.values.Load() }

// PrepareCache makes the compilation cache folder dir safe to hand to
// wazero, which reads and runs its entries as native code without any
// check of its own: the folder is created 0700, refused when it (or a
// folder above it) is another user's or a link, and closed (and emptied
// when others could write it) when it is ours but open. A repair is
// logged. It returns dir with its links resolved, the path to hand to
// wazero (which re-reads the path on every access). See config/RATIONALE.md,
// "Why is the compilation cache trusted once its folder is private, and
// why repair it rather than refuse?".
func PrepareCache(dir string, logger *slog.Logger) (string, error) {
	rep, err := datadir.PrepareCache(dir)
	if err != nil {
		return "", err
	}
	if rep.Changed() {
		logger.Warn("compilation cache folder was open to other users: closed to 0700, entries others could have written removed",
			"closed", rep.Closed, "emptied", rep.Emptied)
	}
	return rep.Dir, nil
}

// instantiateHosts adds the two host modules guests may import and keeps
// their function definitions for checking imports at Load.
func (r *Runtime) instantiateHosts(ctx context.Context) error {
	if _, err := wasi_snapshot_preview1.Instantiate(ctx, r.wz); err != nil {
		return fmt.Errorf("executors: wasi: %w", err)
	}
	host, err := r.hostModule().Instantiate(ctx)
	if err != nil {
		return fmt.Errorf("executors: airlock host module: %w", err)
	}
	r.hostFuncs = map[string]map[string]api.FunctionDefinition{
		wasi_snapshot_preview1.ModuleName: r.wz.Module(wasi_snapshot_preview1.ModuleName).ExportedFunctionDefinitions(),
		hostModuleName:                    host.ExportedFunctionDefinitions(),
	}
	return nil
}

// Close retires every program loaded here and waits for their in-flight
// calls. If ctx ends first it forces them by cancelling them (they answer
// shutting-down), waits for them to leave, and returns ctx's cause; the
// engine is closed only once no call runs in it, since wazero's modules
// are not safe to close under a running call. Either way the runtime is
// freed (RATIONALE.md, "What does Close do when its context ends?").
// Calls to a program after Close are refused with shutting-down.
//
// The wait after cancelling has no bound: a cancelled call leaves at the
// guest's next function entry or loop header, a sleep or fetch returns on
// the cancellation, so only a call blocked in Go code outside wazero that
// ignores its context can hold Close, that is a guest's read of a file in
// a root that blocks in the kernel (a named pipe, a hung network mount)
// or a guest log line to a Logger whose writer blocks.
func (r *Runtime) Close(ctx context.Context) error {
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		return nil
	}
	r.closed = true
	progs := make([]*Program, 0, len(r.programs))
	for p := range r.programs {
		progs = append(progs, p)
	}
	r.mu.Unlock()
	drained := make([]<-chan struct{}, len(progs))
	for i, p := range progs {
		drained[i] = p.retire(wire.ShuttingDown)
	}
	late := false
	for i, p := range progs {
		late = p.drain(ctx, drained[i]) != nil || late
	}
	var err error
	if late {
		for _, p := range progs {
			p.halt()
		}
		for i, p := range progs {
			_ = p.drain(context.WithoutCancel(ctx), drained[i])
		}
		err = fmt.Errorf("executors: close: %w", context.Cause(ctx))
	}
	return errors.Join(err, r.closeWazero(ctx))
}

func (r *Runtime) closeWazero(ctx context.Context) error {
	r.compiling.Wait() // every program is released by now, its compilation stopped
	err := r.wz.Close(context.WithoutCancel(ctx))
	if r.cache != nil {
		err = errors.Join(err, r.cache.Close(context.WithoutCancel(ctx)))
	}
	r.transport.CloseIdleConnections()
	return err
}

// track registers p so Close can retire it and starts its compilation
// (compile) under the same lock, so Close waits for it; it fails once
// closed.
func (r *Runtime) track(p *Program, compile func()) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return ErrRuntimeClosed
	}
	r.programs[p] = struct{}{}
	r.compiling.Add(1)
	compile()
	return nil
}

func (r *Runtime) isClosed() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.closed
}

func (r *Runtime) untrack(p *Program) {
	r.mu.Lock()
	delete(r.programs, p)
	r.mu.Unlock()
}
