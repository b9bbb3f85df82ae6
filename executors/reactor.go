package executors

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math"
	"sync"

	"github.com/tetratelabs/wazero/api"
	"github.com/tetratelabs/wazero/experimental"
)

// The reactor ABI's exports; plugins/sdk/ABI.md is the specification.
const (
	exportInitialize = "_initialize"
	exportAlloc      = "airlock_alloc"
	exportCall       = "airlock_call"
	exportMemory     = "memory"

	statusOK        = 0
	statusError     = 1 // for the operator's log only
	statusToolError = 2 // a tool error for the caller (PROTOCOL section 8)

	// maxToolErrorBytes bounds the tool's error text kept for the log.
	maxToolErrorBytes = 1024
)

// instance is one instantiated reactor. It serves one call at a time; cur
// is that call, read by the instance's stdio and sleep hooks, which were
// fixed at instantiation.
type instance struct {
	mod   api.Module
	alloc api.Function
	call  api.Function
	mem   *limitedAllocator
	cur   *callState
}

// runReactor takes an idle instance (or makes one, inside the call's
// deadline), calls airlock_call, and gives the instance back only if the
// call succeeded or the tool reported a tool error: a trapped, timed-out,
// exhausted or otherwise failed instance may hold broken state and is
// discarded.
func (p *Program) runReactor(s *callState, args []byte) (out []byte, err error) {
	inst := p.pool.get()
	if inst == nil {
		if inst, err = p.newInstance(s); err != nil {
			return nil, err
		}
	}
	ok := false
	defer func() {
		inst.cur = nil
		if !ok || !p.pool.put(inst) {
			inst.close()
		}
	}()
	inst.cur, s.alloc = s, inst.mem
	inst.mem.reset()
	out, err = inst.invoke(s, args, rawOutputCap(p.d.Bounds.MaxOutputBytes))
	// A tool error is the handler returning normally: the instance is
	// as sound as after a success, unless a grow was refused on the way.
	ok = err == nil || (errors.As(err, new(*toolError)) && !inst.mem.exhausted())
	return out, err
}

func (p *Program) newInstance(s *callState) (*instance, error) {
	inst := &instance{mem: newAllocator(p.d.Bounds.MemoryMiB)}
	inst.cur, s.alloc = s, inst.mem
	w := instanceWriter{inst}
	cfg := p.base.
		WithStartFunctions(exportInitialize).
		WithStdout(w).
		WithStderr(w).
		WithNanosleep(inst.sleep)
	ctx := experimental.WithMemoryAllocator(s.ctx, inst.mem)
	mod, err := p.rt.wz.InstantiateModule(ctx, p.compiled, cfg)
	if err != nil {
		if mod != nil {
			_ = mod.Close(context.WithoutCancel(ctx))
		}
		return nil, err
	}
	inst.mod = mod
	inst.alloc = mod.ExportedFunction(exportAlloc)
	inst.call = mod.ExportedFunction(exportCall)
	return inst, nil
}

// invoke copies the tool name and args into one guest buffer, calls
// airlock_call and reads the status-prefixed result.
func (inst *instance) invoke(s *callState, args []byte, maxOut int) ([]byte, error) {
	n := len(s.tool) + len(args)
	if n > math.MaxInt32 {
		return nil, errABI
	}
	res, err := inst.alloc.Call(s.ctx, uint64(n))
	if err != nil {
		return nil, err
	}
	ptr, mem := uint32(res[0]), inst.mod.Memory()
	argsPtr := ptr + uint32(len(s.tool))
	if ptr == 0 || !mem.WriteString(ptr, s.tool) || !mem.Write(argsPtr, args) {
		return nil, errABI
	}
	res, err = inst.call.Call(s.ctx, uint64(ptr), uint64(len(s.tool)), uint64(argsPtr), uint64(len(args)))
	if err != nil {
		return nil, err
	}
	rptr, rlen := uint32(res[0]>>32), uint32(res[0])
	if rlen == 0 {
		return nil, errABI
	}
	status, ok := mem.ReadByte(rptr)
	if status == statusOK && int64(rlen)-1 > int64(maxOut) {
		s.outputOver = true
		return nil, errOutputOver
	}
	buf, ok2 := mem.Read(rptr, rlen)
	if !ok || !ok2 {
		return nil, errABI
	}
	switch status {
	case statusOK:
		return bytes.Clone(buf[1:]), nil
	case statusError:
		msg := buf[1:min(len(buf), 1+maxToolErrorBytes)]
		return nil, fmt.Errorf("%w: %s", errToolFailed, msg)
	case statusToolError:
		// The message is cleaned and cut to wire.MaxWhyBytes; more than
		// maxOut bytes of it are never even copied.
		return nil, newToolError(string(buf[1:min(len(buf), 1+maxOut)]))
	}
	return nil, errABI
}

func (inst *instance) sleep(ns int64) {
	if s := inst.cur; s != nil {
		s.sleep(ns)
	}
}

func (inst *instance) close() {
	if inst.mod != nil {
		_ = inst.mod.Close(context.Background())
	}
}

// instanceWriter sends a reactor's stdout and stderr to the current
// call's bounded stderr buffer: a reactor answers through airlock_call, so
// anything it prints is for the operator.
type instanceWriter struct{ inst *instance }

func (w instanceWriter) Write(b []byte) (int, error) {
	if s := w.inst.cur; s != nil {
		return s.stderr.Write(b)
	}
	return len(b), nil
}

// pool keeps up to size idle instances of one program, most recently used
// first (its memory is most likely still in cache).
type pool struct {
	mu     sync.Mutex
	idle   []*instance
	size   int
	closed bool
}

func newPool(size int) *pool { return &pool{size: size} }

func (p *pool) get() *instance {
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.idle) == 0 {
		return nil
	}
	inst := p.idle[len(p.idle)-1]
	p.idle = p.idle[:len(p.idle)-1]
	return inst
}

// put keeps inst if there is room; false means the caller must close it.
func (p *pool) put(inst *instance) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed || len(p.idle) >= p.size {
		return false
	}
	p.idle = append(p.idle, inst)
	return true
}

func (p *pool) close() {
	p.mu.Lock()
	idle := p.idle
	p.idle, p.closed = nil, true
	p.mu.Unlock()
	for _, inst := range idle {
		inst.close()
	}
}
