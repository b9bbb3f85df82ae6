package devkit

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"

	"github.com/airlock/airlock/config/filecheck"
	"github.com/airlock/airlock/executors"
	"github.com/airlock/airlock/executors/wire"
	"github.com/airlock/airlock/plugins"
)

// Style is how the module runs (plugins/sdk/ABI.md): a reactor is
// instantiated once and pooled, a command afresh for every call.
type Style string

// The two styles; the same SDK source builds as either.
const (
	Reactor Style = "reactor"
	Command Style = "command"
)

// BuildOptions say how to compile a project.
type BuildOptions struct {
	Style  Style     // "" is Reactor
	TinyGo bool      // compile with tinygo instead of go (see RATIONALE.md, "Why is TinyGo opt-in for `airlock build`?")
	Env    []string  // the compiler's environment; GOOS, GOARCH and CGO_ENABLED are set on top
	Output io.Writer // the compiler's output (errors, warnings)
	// CacheDir is the wazero compilation cache for the check (a broker's,
	// plugins.CacheDir, so the broker and `airlock run` reuse the check's
	// compilation); "" compiles without one.
	CacheDir string
}

// Built is a project that compiled and passed the catalog's checks.
type Built struct {
	Manifest plugins.Manifest
	Module   string // the module's path
	Size     int
	Style    Style
	Compiler string // "go" or "tinygo"
	// Signature is the plugin's signature bundle (plugins.SignFolder),
	// which Install copies beside it; nil for none.
	Signature []byte
}

// Build compiles the Go project in dir to the WASI module its plugin.json
// names, writes the module's SHA-256 into plugin.json (changing nothing
// else in the file) and checks the result with the catalog's own
// admission (plugins.Admit: descriptor, hash, compilation with wazero,
// imports, style, memory, schemas). Roots are names the operator maps,
// so each declared root is mapped to an empty folder for the check. The
// module and plugin.json are written only when every check passes; the
// descriptor is checked before compiling, so a bad plugin.json costs no
// compilation.
func Build(ctx context.Context, dir string, o BuildOptions) (Built, error) {
	manifestPath := filepath.Join(dir, plugins.ManifestName)
	data, err := readProject(dir)
	if err != nil {
		return Built{}, err
	}
	m, err := preCheck(manifestPath, data)
	if err != nil {
		return Built{}, err
	}
	b := Built{Style: Reactor, Compiler: "go", Module: filepath.Join(dir, m.Module)}
	if o.Style == Command {
		b.Style = Command
	}
	tmp, err := compile(ctx, dir, m.Module, &b, o)
	if err != nil {
		return Built{}, err
	}
	defer os.RemoveAll(filepath.Dir(tmp))
	module, err := os.ReadFile(tmp)
	if err != nil {
		return Built{}, err
	}
	b.Size = len(module)
	final, err := plugins.SetSHA256(data, plugins.HashModule(module))
	if err != nil {
		return Built{}, &RefusedError{plugins.ReasonDescriptorInvalid, err}
	}
	if b.Manifest, err = check(ctx, final, module, o.CacheDir); err != nil {
		return Built{}, err
	}
	if err := os.Rename(tmp, b.Module); err != nil {
		return Built{}, err
	}
	return b, writeFileAtomic(manifestPath, final)
}

// readProject reads dir's plugin.json with the catalog's checks (a
// regular file, no link, at most plugins.MaxManifestBytes), refusing a dir
// that is not a project.
func readProject(dir string) ([]byte, error) {
	info, err := os.Stat(dir)
	if err != nil || !info.IsDir() {
		return nil, usagef("%s is not a folder", dir)
	}
	data, err := filecheck.ReadPath(filepath.Join(dir, plugins.ManifestName), plugins.MaxManifestBytes)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil, usagef("%s has no %s: not a plugin project (airlock new NAME makes one)", dir, plugins.ManifestName)
	case errors.Is(err, filecheck.ErrRefused):
		// As the catalog would refuse it.
		return nil, &RefusedError{plugins.ReasonDescriptorInvalid, err}
	}
	return data, err
}

// preCheck parses plugin.json (at name) as the catalog would, whatever
// its sha256 holds now (a fresh project's is zeros; an edited module's is
// stale).
func preCheck(name string, data []byte) (plugins.Manifest, error) {
	any, err := plugins.SetSHA256(data, strings.Repeat("0", 64))
	if err != nil {
		// A document the strict walk refuses is said with its place, as
		// the catalog says it; SetSHA256's own text is for the rest (no
		// sha256 member).
		if _, perr := plugins.ParseManifestFile(name, data); isLocated(perr) {
			err = perr
		}
		return plugins.Manifest{}, &RefusedError{plugins.ReasonDescriptorInvalid, err}
	}
	m, err := plugins.ParseManifestFile(name, any)
	if err != nil {
		return m, &RefusedError{plugins.ReasonDescriptorInvalid, err}
	}
	return m, nil
}

// isLocated reports whether err is a refusal of the strict walk, which
// names its line and column.
func isLocated(err error) bool {
	var d *wire.DecodeError
	return errors.As(err, &d)
}

// compile runs the compiler into a hidden folder beside the module (so
// the rename into place stays on one file system) and returns the
// module's path there; the caller removes its folder.
func compile(ctx context.Context, dir, module string, b *Built, o BuildOptions) (string, error) {
	stage, err := os.MkdirTemp(dir, ".build-")
	if err != nil {
		return "", err
	}
	out, err := filepath.Abs(filepath.Join(stage, module))
	if err != nil {
		os.RemoveAll(stage)
		return "", err
	}
	name, args := "go", GoArgs(b.Style, out)
	if o.TinyGo {
		name, args = "tinygo", TinyGoArgs(b.Style, out)
	}
	b.Compiler = name
	path, err := exec.LookPath(name)
	if err != nil {
		os.RemoveAll(stage)
		return "", fmt.Errorf("%s is not on PATH", name)
	}
	cmd := exec.CommandContext(ctx, path, args...)
	cmd.Dir = dir
	cmd.Env = slices.Concat(o.Env, []string{"GOOS=wasip1", "GOARCH=wasm", "CGO_ENABLED=0"})
	cmd.Stdout, cmd.Stderr = o.Output, o.Output
	if err := cmd.Run(); err != nil {
		os.RemoveAll(stage)
		return "", fmt.Errorf("%s build failed (%v); its output is above", name, err)
	}
	return out, nil
}

// GoArgs are the arguments after "go" that build the package in the
// current folder to out as a wasip1 module of style s, reproducibly (no
// paths or VCS stamps in the module). The bundled plugins are built with
// the same arguments.
func GoArgs(s Style, out string) []string {
	args := []string{"build", "-trimpath", "-buildvcs=false"}
	if s != Command {
		args = append(args, "-buildmode=c-shared")
	}
	return append(args, "-o", out, ".")
}

// TinyGoArgs are the arguments after "tinygo" for the same build; TinyGo
// 0.34 or newer is needed for //go:wasmexport.
func TinyGoArgs(s Style, out string) []string {
	args := []string{"build", "-target=wasip1", "-no-debug"}
	if s != Command {
		args = append(args, "-buildmode=c-shared")
	}
	return append(args, "-o", out, ".")
}

// check admits the built plugin into a private runtime, as the catalog
// would, and closes it again.
func check(ctx context.Context, manifest, module []byte, cacheDir string) (plugins.Manifest, error) {
	m, err := plugins.ParseManifestFile(plugins.ManifestName, manifest)
	if err != nil {
		return m, &RefusedError{plugins.ReasonDescriptorInvalid, err}
	}
	empty, err := os.MkdirTemp("", "airlock-build-root-")
	if err != nil {
		return m, err
	}
	defer os.RemoveAll(empty)
	roots := map[string]string{}
	for _, r := range m.Bounds.Roots {
		roots[r] = empty
	}
	rt, err := executors.NewRuntime(ctx, executors.Config{CacheDir: cacheDir, Roots: roots, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		return m, err
	}
	defer func() { _ = rt.Close(ctx) }()
	prog, err := plugins.Admit(ctx, rt, m, module)
	if err != nil {
		return m, refused(err)
	}
	return m, prog.Close(ctx)
}

// writeFileAtomic replaces path with data through a rename, so a broker
// watching the folder never reads half a file.
func writeFileAtomic(path string, data []byte) error {
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+"-*")
	if err != nil {
		return err
	}
	defer os.Remove(f.Name())
	if _, err := f.Write(data); err != nil {
		f.Close()
		return err
	}
	if err := f.Chmod(0o644); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	return os.Rename(f.Name(), path)
}

// Install copies a built project's plugin.json and module into the
// plugins folder pluginsDir as the folder <id>, staged and renamed into
// place (plugins.WriteFolder) so a watching broker admits it whole.
func Install(b Built, pluginsDir string) error {
	module, err := os.ReadFile(b.Module)
	if err != nil {
		return err
	}
	// A plugins folder named for the first time is made, as `mkdir -p`
	// would: the operator asked for the plugin to be there.
	if err := os.MkdirAll(pluginsDir, 0o755); err != nil {
		return err
	}
	return plugins.WriteSignedFolder(pluginsDir, b.Manifest, module, b.Signature)
}
