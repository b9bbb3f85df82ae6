package baseline

import (
	"bytes"
	"context"
	"fmt"

	"github.com/tetratelabs/wazero/api"
)

// The reactor ABI's exports and result status bytes (plugins/sdk/ABI.md).
const (
	exportInitialize = "_initialize"
	exportAlloc      = "airlock_alloc"
	exportCall       = "airlock_call"

	statusOK        = 0
	statusError     = 1
	statusToolError = 2
)

// Instance is one instantiated reactor, reused for every call: the floor
// that the broker's instance pool approaches. It serves one call at a
// time.
type Instance struct {
	mod   api.Module
	alloc api.Function
	call  api.Function
}

// NewInstance instantiates the reactor and runs _initialize once.
func (r *Runner) NewInstance(ctx context.Context) (*Instance, error) {
	if r.style != Reactor {
		return nil, fmt.Errorf("baseline: instance: %w", ErrNotReactor)
	}
	inst, err := r.instantiate(ctx)
	if err != nil {
		return nil, fmt.Errorf("baseline: instance: %w", err)
	}
	return inst, nil
}

func (r *Runner) instantiate(ctx context.Context) (*Instance, error) {
	mod, err := r.rt.InstantiateModule(ctx, r.compiled, r.config)
	if err != nil {
		return nil, err
	}
	return &Instance{mod: mod, alloc: mod.ExportedFunction(exportAlloc), call: mod.ExportedFunction(exportCall)}, nil
}

// Call runs tool on the instance and returns the observation.
func (i *Instance) Call(ctx context.Context, tool string, args []byte) ([]byte, error) {
	out, err := i.invoke(ctx, tool, args)
	if err != nil {
		return nil, fmt.Errorf("baseline: %s: %w", tool, err)
	}
	return out, nil
}

// invoke is one airlock_alloc, a copy of tool and args into the guest,
// one airlock_call, and a copy of the result out of it.
func (i *Instance) invoke(ctx context.Context, tool string, args []byte) ([]byte, error) {
	res, err := i.alloc.Call(ctx, uint64(len(tool)+len(args)))
	if err != nil {
		return nil, err
	}
	ptr, mem := api.DecodeU32(res[0]), i.mod.Memory()
	argsPtr := ptr + uint32(len(tool))
	if ptr == 0 || !mem.WriteString(ptr, tool) || !mem.Write(argsPtr, args) {
		return nil, ErrABI
	}
	res, err = i.call.Call(ctx, uint64(ptr), uint64(len(tool)), uint64(argsPtr), uint64(len(args)))
	if err != nil {
		return nil, err
	}
	buf, ok := mem.Read(uint32(res[0]>>32), uint32(res[0]))
	switch {
	case !ok || len(buf) == 0:
		return nil, ErrABI
	case buf[0] == statusOK:
		return bytes.Clone(buf[1:]), nil
	case buf[0] == statusError, buf[0] == statusToolError:
		return nil, fmt.Errorf("%w: %s", ErrToolFailed, buf[1:])
	}
	return nil, ErrABI
}

// Close closes the instance at once, cutting a call running in it; ctx
// only carries values to the engine.
func (i *Instance) Close(ctx context.Context) error {
	if err := i.mod.Close(ctx); err != nil {
		return fmt.Errorf("baseline: instance close: %w", err)
	}
	return nil
}
