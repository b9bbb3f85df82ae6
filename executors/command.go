package executors

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/experimental"
	"github.com/tetratelabs/wazero/sys"

	"github.com/airlock/airlock/executors/wire"
)

// baseModuleConfig is what every instance of a program shares: anonymous
// (so instances never collide by name), the roots, real clocks and
// crypto randomness so Go guests work, no environment variables.
func baseModuleConfig(fs wazero.FSConfig) wazero.ModuleConfig {
	return wazero.NewModuleConfig().
		WithName("").
		WithFSConfig(fs).
		WithSysWalltime().
		WithSysNanotime().
		WithRandSource(rand.Reader)
}

// runCommand instantiates the module afresh with the call's args on
// stdin and argv [tool]; _start runs inside the instantiation, and its
// stdout is the observation.
func (p *Program) runCommand(s *callState, args []byte) ([]byte, error) {
	stdout := &limitedWriter{limit: rawOutputCap(p.d.Bounds.MaxOutputBytes), over: func() {
		s.outputOver = true
		s.cancel(errOutputOver)
	}}
	s.alloc = newAllocator(p.d.Bounds.MemoryMiB)
	s.alloc.spare = p.memory
	cfg := p.base.
		WithArgs(s.tool).
		WithStdin(bytes.NewReader(args)).
		WithStdout(stdout).
		WithStderr(&s.stderr).
		WithNanosleep(s.sleep)
	ctx := experimental.WithMemoryAllocator(s.ctx, s.alloc)
	mod, err := p.rt.wz.InstantiateModule(ctx, p.compiled, cfg)
	if mod != nil {
		_ = mod.Close(context.WithoutCancel(ctx))
	}
	// The guest has stopped and its instance is closed: its memory can
	// serve the next call once zeroed.
	s.alloc.recycle()
	if te := commandToolError(stdout.buf.Bytes(), err); te != nil {
		return nil, te
	}
	return stdout.buf.Bytes(), err
}

// commandToolError reads a command's tool error: exit code 1 with stdout
// exactly one JSON object whose only member "error" is a string. Any
// other failure is not the tool speaking, and keeps the generic why.
func commandToolError(stdout []byte, err error) *toolError {
	var exit *sys.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 1 {
		return nil
	}
	m, merr := wire.Members(stdout)
	raw, ok := m["error"]
	if merr != nil || len(m) != 1 || !ok || len(raw) == 0 || raw[0] != '"' {
		return nil
	}
	var msg string
	if json.Unmarshal(raw, &msg) != nil {
		return nil
	}
	return newToolError(msg)
}

// rawOutputCap is how much raw output a run may produce before it is
// stopped. The bound applies to observed, the compacted JSON object, so
// output that compacts within the bound (a trailing newline, indentation)
// is read in full; past twice the bound plus 4 KiB no compaction could
// bring it back, and the guest is stopped early.
func rawOutputCap(maxOutputBytes int) int { return 2*maxOutputBytes + 4096 }

// limitedWriter is a command's stdout. The first write that would take it
// past limit is refused and calls over, which cancels the run: the guest
// is stopped rather than left to compute output nobody will read.
type limitedWriter struct {
	limit int
	buf   bytes.Buffer
	over  func()
	hit   bool
}

func (w *limitedWriter) Write(p []byte) (int, error) {
	if w.hit || w.buf.Len()+len(p) > w.limit {
		if !w.hit {
			w.hit = true
			w.over()
		}
		return 0, errOutputOver
	}
	return w.buf.Write(p)
}
