package executors

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
	"github.com/tetratelabs/wazero/experimental"

	"github.com/airlock/airlock/config/plugincfg"
	"github.com/airlock/airlock/executors/toolschema"
	"github.com/airlock/airlock/executors/wire"
)

// style is how a module is run: a command is instantiated per call, a
// reactor is instantiated once and its airlock_call export reused.
type style int

const (
	styleCommand style = iota + 1
	styleReactor
)

func (s style) String() string {
	if s == styleReactor {
		return "reactor"
	}
	return "command"
}

// Program is an admitted module for one descriptor. It is safe for
// concurrent use; Close retires it.
type Program struct {
	rt      *Runtime
	d       wire.Descriptor
	echo    wire.EchoCheck // boundsEcho against d.Bounds
	schemas map[string]*toolschema.Schema
	// outputs is the outputSchema of each tool that declares one.
	outputs map[string]*toolschema.Schema
	// compiled, style and memory are set by compileLater before ready is
	// closed, and read only after it is; loadErr is why the module was not
	// admitted.
	compiled    wazero.CompiledModule
	style       style
	ready       chan struct{}
	loadErr     error
	stopCompile context.CancelFunc
	turn        chan struct{} // closed when compileQueue gives it its turn
	wanted      atomic.Bool   // a call waits for it: compiled next
	mounts      *mounts
	base        wazero.ModuleConfig
	sem         chan struct{}
	pool        *pool
	// memory is a command's recycled linear memories; nil for a reactor.
	memory *memoryPool
	log    *slog.Logger
	// config is the names the descriptor lets config_get read.
	config map[string]bool

	life lifecycle

	// testHook, when set, runs in every call at stage "check" (before the
	// checks) and "run" (once the call state is built); tests use it to
	// inject a panic.
	testHook func(stage string)
}

// LoadOption adds to what Load admits beyond the wire descriptor.
type LoadOption func(*Program) error

// WithConfig lets the module read the operator's values of these names
// (plugin.json's "config") with config_get; without it, it reads none.
// Names are checked as plugin.json's are (plugincfg.CheckNames).
func WithConfig(names []string) LoadOption {
	return func(p *Program) error {
		if err := plugincfg.CheckNames(names); err != nil {
			return admission(ReasonDescriptorInvalid, fmt.Errorf("config: %w", err))
		}
		for _, n := range names {
			p.config[n] = true
		}
		return nil
	}
}

// Load compiles module and admits it for d, or says why not with an
// *AdmissionError: Prepare, then Ready.
func (r *Runtime) Load(ctx context.Context, d wire.Descriptor, module []byte, opts ...LoadOption) (*Program, error) {
	p, err := r.Prepare(ctx, d, module, opts...)
	if err != nil {
		return nil, err
	}
	if err = p.Ready(ctx); err != nil {
		_ = p.Close(context.WithoutCancel(ctx)) // no call is in flight
		return nil, err
	}
	return p, nil
}

// Prepare admits d for module with the checks that need no compilation
// (the descriptor, its schemas and roots) and returns the program while
// module compiles in the background, one module at a time; its imports,
// style and memory are checked once it has. A call waits for that within
// its time bound; Ready waits for it and says whether the module was
// admitted. See RATIONALE.md, "Why are tools listed before their modules
// compile?".
func (r *Runtime) Prepare(ctx context.Context, d wire.Descriptor, module []byte, opts ...LoadOption) (*Program, error) {
	if r.isClosed() {
		return nil, ErrRuntimeClosed
	}
	d = cloneDescriptor(d)
	if err := d.Validate(); err != nil {
		return nil, admission(ReasonDescriptorInvalid, err)
	}
	p := &Program{rt: r, d: d, echo: d.Bounds.EchoCheck(),
		sem: make(chan struct{}, r.cfg.MaxConcurrent),
		log: r.cfg.Logger.With("descriptor", d.DescriptorID), config: map[string]bool{}}
	for _, o := range opts {
		if err := o(p); err != nil {
			return nil, err
		}
	}
	var err error
	if p.schemas, p.outputs, err = compileSchemas(d.Tools, r.cfg.MaxConcurrent); err != nil {
		return nil, err
	}
	if p.mounts, err = openMounts(d.Bounds.Roots, r.cfg.Roots); err != nil {
		return nil, err
	}
	p.base = baseModuleConfig(p.mounts.fs)
	p.pool = newPool(r.cfg.PoolSize)
	p.ready = make(chan struct{})
	compileCtx, stop := context.WithCancel(context.WithoutCancel(ctx))
	p.stopCompile = stop
	if err = r.track(p, func() { go p.compileLater(compileCtx, module) }); err != nil {
		stop()
		close(p.ready)
		p.release(ctx)
		return nil, err
	}
	return p, nil
}

// compileWorkers is how many goroutines compile one module: with more than
// one, wazero stops a compilation whose context ends between two
// functions, so a retired program or a closing runtime does not wait for
// a whole module.
const compileWorkers = 2

// compileLater compiles module once it is its turn (compileQueue),
// records the outcome and closes ready. A program retired first is never
// compiled; one retired while compiling stops, with ErrRetired.
func (p *Program) compileLater(ctx context.Context, module []byte) {
	defer p.rt.compiling.Done()
	defer close(p.ready)
	if !p.rt.compiles.wait(ctx, p) {
		p.loadErr = ErrRetired
		return
	}
	defer p.rt.compiles.next()
	if ctx.Err() != nil {
		p.loadErr = ErrRetired
		return
	}
	p.loadErr = p.compile(experimental.WithCompilationWorkers(ctx, compileWorkers), module)
	switch {
	case p.loadErr != nil && ctx.Err() != nil:
		p.loadErr = ErrRetired
	case p.loadErr == nil && p.style == styleCommand:
		p.memory = &memoryPool{}
	}
}

// compileQueue runs one compilation at a time, in the order the programs
// were prepared, except that a program a call waits for goes next: a
// call's time bound then covers one module's compilation, not the queue's.
type compileQueue struct {
	mu      sync.Mutex
	busy    bool
	waiting []*Program
}

// wait returns true when it is p's turn, false when ctx ends first.
func (q *compileQueue) wait(ctx context.Context, p *Program) bool {
	q.mu.Lock()
	if !q.busy {
		q.busy = true
		q.mu.Unlock()
		return true
	}
	p.turn = make(chan struct{})
	q.waiting = append(q.waiting, p)
	q.mu.Unlock()
	select {
	case <-p.turn:
		return true
	case <-ctx.Done():
	}
	q.mu.Lock()
	i := slices.Index(q.waiting, p)
	if i >= 0 {
		q.waiting = slices.Delete(q.waiting, i, i+1)
	}
	q.mu.Unlock()
	if i < 0 { // given the turn meanwhile: pass it on
		q.next()
	}
	return false
}

// next ends a compilation and gives the turn to the first wanted program
// waiting, else the first waiting.
func (q *compileQueue) next() {
	q.mu.Lock()
	defer q.mu.Unlock()
	if len(q.waiting) == 0 {
		q.busy = false
		return
	}
	i := max(0, slices.IndexFunc(q.waiting, func(p *Program) bool { return p.wanted.Load() }))
	p := q.waiting[i]
	q.waiting = slices.Delete(q.waiting, i, i+1)
	close(p.turn)
}

// await is Ready for a call: a module still compiling is waited for
// within the call's time bound, and compiled next if it is still queued.
func (p *Program) await(ctx context.Context) error {
	select {
	case <-p.ready:
		return p.loadErr
	default:
	}
	p.wanted.Store(true)
	return p.Ready(ctx)
}

// Ready waits until the module is compiled and checked, and returns nil
// when it is admitted, the *AdmissionError that refuses it, ErrRetired
// when the program was retired first, or ctx's cause when ctx ends first.
func (p *Program) Ready(ctx context.Context) error {
	select {
	case <-p.ready:
		return p.loadErr
	default:
	}
	select {
	case <-p.ready:
		return p.loadErr
	case <-ctx.Done():
		return context.Cause(ctx)
	}
}

// compile compiles the module, then checks its imports, style and memory.
func (p *Program) compile(ctx context.Context, module []byte) error {
	compiled, err := p.rt.wz.CompileModule(ctx, module)
	if err != nil {
		return admission(ReasonCompileFailed, err)
	}
	p.compiled = compiled
	info, err := readBinary(module)
	if err != nil {
		return admission(ReasonCompileFailed, err)
	}
	if err = p.rt.checkImports(info.imports, compiled.ImportedFunctions()); err != nil {
		return admission(ReasonImportsRefused, err)
	}
	if p.style, err = detectStyle(compiled); err != nil {
		return admission(ReasonABIInvalid, err)
	}
	limit := uint64(p.d.Bounds.MemoryMiB) << 20
	if info.minPages*pageBytes > limit {
		return admission(ReasonMemoryInvalid, fmt.Errorf("the module declares at least %d MiB of memory, over bounds.memoryMiB %d",
			(info.minPages*pageBytes+1<<20-1)>>20, p.d.Bounds.MemoryMiB))
	}
	return nil
}

// checkImports admits only functions the host modules define, with the
// signature they define; any table, memory, global or tag import, or any
// other module, is refused.
func (r *Runtime) checkImports(all []wasmImport, funcs []api.FunctionDefinition) error {
	for _, imp := range all {
		if imp.kind != kindFunc {
			return fmt.Errorf("imports a non-function %s.%s", imp.module, imp.name)
		}
		if _, ok := r.hostFuncs[imp.module][imp.name]; !ok {
			return fmt.Errorf("imports %s.%s, which the broker does not provide", imp.module, imp.name)
		}
	}
	for _, f := range funcs {
		mod, name, _ := f.Import()
		want := r.hostFuncs[mod][name]
		if want == nil || !sameSignature(f, want) {
			return fmt.Errorf("imports %s.%s with the wrong signature", mod, name)
		}
	}
	return nil
}

func sameSignature(a, b api.FunctionDefinition) bool {
	return slices.Equal(a.ParamTypes(), b.ParamTypes()) && slices.Equal(a.ResultTypes(), b.ResultTypes())
}

var (
	i32 = api.ValueTypeI32
	i64 = api.ValueTypeI64
)

// detectStyle tells a command (exports _start) from a reactor (exports
// _initialize and the airlock ABI, see plugins/sdk/ABI.md).
func detectStyle(c wazero.CompiledModule) (style, error) {
	ex := c.ExportedFunctions()
	if f, ok := ex["_start"]; ok {
		if len(f.ParamTypes()) != 0 || len(f.ResultTypes()) != 0 {
			return 0, errors.New("_start must take and return nothing")
		}
		return styleCommand, nil
	}
	if _, ok := ex["_initialize"]; !ok {
		return 0, ErrNoStyle
	}
	wants := map[string][2][]api.ValueType{
		exportInitialize: {nil, nil},
		exportAlloc:      {{i32}, {i32}},
		exportCall:       {{i32, i32, i32, i32}, {i64}},
	}
	for name, sig := range wants {
		f, ok := ex[name]
		if !ok || !slices.Equal(f.ParamTypes(), sig[0]) || !slices.Equal(f.ResultTypes(), sig[1]) {
			return 0, fmt.Errorf("reactor export %s missing or of the wrong signature", name)
		}
	}
	if _, ok := c.ExportedMemories()[exportMemory]; !ok {
		return 0, errors.New("reactor must export its memory as \"memory\"")
	}
	return styleReactor, nil
}

// compileSchemas admits each tool's inputSchema (toolschema.Compile: its
// expanded size and its patterns bounded, no $ref read from outside it)
// and its outputSchema, if any (the same bounds), keeping up to MaxConcurrent compiled copies of each
// between calls.
func compileSchemas(tools []wire.Tool, idle int) (inputs, outputs map[string]*toolschema.Schema, err error) {
	inputs = make(map[string]*toolschema.Schema, len(tools))
	outputs = map[string]*toolschema.Schema{}
	for _, t := range tools {
		s, err := toolschema.Compile(t.InputSchema, idle)
		if err != nil {
			return nil, nil, schemaRefused("tool "+t.Name, err)
		}
		inputs[t.Name] = s
		if t.OutputSchema == nil {
			continue
		}
		if outputs[t.Name], err = toolschema.Compile(t.OutputSchema, idle); err != nil {
			return nil, nil, schemaRefused("the outputSchema of tool "+t.Name, err)
		}
	}
	return inputs, outputs, nil
}

// schemaRefused is the admission error of a schema toolschema refused
// (a *toolschema.Error), its reason kept and what names the schema.
func schemaRefused(what string, err error) error {
	var se *toolschema.Error
	errors.As(err, &se)
	return admission(se.Reason, fmt.Errorf("%s: %w", what, se.Err))
}

// Outputs is the admitted outputSchema of each tool that declares one,
// compiled once at Load: the router holds the program's observations to
// them (PROTOCOL section 5.2, output-invalid). The map is never changed.
func (p *Program) Outputs() map[string]*toolschema.Schema { return p.outputs }

// WithModuleHash records the module's hex SHA-256, which the caller has
// checked against the module it passes to Load (plugin.json's sha256):
// the admitted descriptor lists it (wire.Descriptor.SHA256), and receipts
// name it.
func WithModuleHash(sum string) LoadOption {
	return func(p *Program) error {
		p.d.SHA256 = sum
		return nil
	}
}

// cloneDescriptor copies d's slices so a caller mutating its value later
// cannot change an admitted program.
func cloneDescriptor(d wire.Descriptor) wire.Descriptor {
	d.Tools = slices.Clone(d.Tools)
	for i := range d.Tools {
		d.Tools[i].InputSchema = json.RawMessage(slices.Clone([]byte(d.Tools[i].InputSchema)))
		if d.Tools[i].OutputSchema != nil {
			d.Tools[i].OutputSchema = json.RawMessage(slices.Clone([]byte(d.Tools[i].OutputSchema)))
		}
	}
	d.Bounds.AllowedHosts = slices.Clone(d.Bounds.AllowedHosts)
	d.Bounds.Roots = slices.Clone(d.Bounds.Roots)
	if d.Signer != nil {
		s := *d.Signer
		d.Signer = &s
	}
	if d.Source != nil {
		s := *d.Source
		d.Source = &s
	}
	return d
}

// ConfigNames are the names config_get may read, sorted.
func (p *Program) ConfigNames() []string {
	names := make([]string, 0, len(p.config))
	for n := range p.config {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

// Descriptor returns the admitted descriptor (a copy).
func (p *Program) Descriptor() wire.Descriptor { return cloneDescriptor(p.d) }

// Admitted returns the admitted descriptor itself, without copying: it is
// on every call's path. The program never changes it after Load, and
// neither may the caller.
func (p *Program) Admitted() *wire.Descriptor { return &p.d }
