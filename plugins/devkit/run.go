package devkit

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"

	"github.com/airlock/airlock/config/filecheck"
	"github.com/airlock/airlock/executors"
	"github.com/airlock/airlock/executors/wire"
	"github.com/airlock/airlock/plugins"
)

// RunOptions are the operator's side of an offline call: the executors'
// configuration, as a broker's (plugins.RuntimeConfig): roots, limits,
// the compilation cache, and the logger that gets the tool's log lines
// and stderr (nil discards them).
type RunOptions struct {
	Runtime executors.Config
}

// RunCallID is the callId of an offline call's envelope.
const RunCallID = "run_1"

// Run admits the built project in dir as the catalog would (plugins.
// LoadFolder: descriptor, hash, compilation, imports, roots) and makes one
// call of tool with args through the executors, exactly as a broker runs
// a local call (the observation held to the tool's outputSchema, if any): the envelope carries the descriptor's bounds as its
// boundsEcho and the answer is the broker's answer envelope, ok or
// refused. A project that would not be admitted is a *RefusedError.
func Run(ctx context.Context, dir, tool string, args json.RawMessage, o RunOptions) (wire.Answer, error) {
	data, err := readProject(dir)
	if err != nil {
		return wire.Answer{}, err
	}
	// LoadFolder reads it again; this names the file as the author knows it.
	if _, err := plugins.ParseManifestFile(filepath.Join(dir, plugins.ManifestName), data); err != nil {
		return wire.Answer{}, &RefusedError{plugins.ReasonDescriptorInvalid, err}
	}
	logger := o.Runtime.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
		o.Runtime.Logger = logger
	}
	rt, err := executors.NewRuntime(ctx, o.Runtime)
	if err != nil {
		return wire.Answer{}, err
	}
	defer func() { _ = rt.Close(ctx) }()
	prog, m, err := plugins.LoadFolder(ctx, rt, filecheck.Dir(dir), ".", "")
	if err != nil {
		return wire.Answer{}, refusedHint(dir, err)
	}
	defer func() { _ = prog.Close(ctx) }()
	bounds, _ := json.Marshal(m.Bounds)
	c := wire.Call{V: wire.Version, CallID: RunCallID, Tool: tool, DescriptorID: m.ID, Args: args, BoundsEcho: bounds}
	if err := c.Validate(); err != nil {
		return wire.Answer{}, usagef("the call is not valid: %v", err)
	}
	a, panicked := wire.Contain(ctx, prog, c)
	if panicked != nil {
		logger.Error("executor panic", "descriptor", m.ID, "tool", tool, "err", panicked)
	}
	// As the broker's router does for every call (output-invalid).
	return prog.Outputs()[tool].Hold(ctx, a), nil
}

// refusedHint is the admission refusal, with what to do for those an
// author meets first.
func refusedHint(dir string, err error) error {
	r := refused(err)
	switch r.Reason {
	case plugins.ReasonModuleMissing, plugins.ReasonHashMismatch:
		r.Err = fmt.Errorf("%w (airlock build %s writes the module and its hash)", r.Err, dir)
	case executors.ReasonRootUnmapped:
		r.Err = fmt.Errorf("%w (map it with --root NAME=DIR)", r.Err)
	}
	return r
}

// refused is an admission error of plugins.LoadFolder or plugins.Admit as
// a RefusedError, its detail without the executors' own prefix.
func refused(err error) *RefusedError {
	r := &RefusedError{Reason: plugins.Reason(err), Err: err}
	var a *executors.AdmissionError
	if errors.As(err, &a) {
		r.Err = a.Err
	}
	return r
}
