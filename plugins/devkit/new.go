package devkit

import (
	"bytes"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"text/template"

	"github.com/airlock/airlock/config/pluginid"
	"github.com/airlock/airlock/executors/wire"
	"github.com/airlock/airlock/plugins"
)

// SDKModule is the guest SDK's module path. A project requires it and
// replaces it with its own copy in ./sdk: the path is not fetchable, and
// need not be (RATIONALE.md, "Why does `airlock new` copy the guest SDK
// into the project?").
const SDKModule = "github.com/airlock/airlock/plugins/sdk"

// GoVersion is the go directive of a new project and of its SDK copy: the
// oldest Go that builds the SDK (//go:wasmexport, for reactors, came in
// Go 1.24). A newer directive would make an older toolchain try to
// download a newer one.
const GoVersion = "1.24"

//go:embed template/*.tmpl
var templates embed.FS

// project is what the templates are filled with.
type project struct {
	ID, Tool, Module, SDKModule, GoVersion, ZeroSHA256 string
}

// New writes a plugin project for the plugin id name into dir (created if
// need be; refused unless it is empty) and returns the paths it wrote,
// relative to dir and sorted. The project builds with `airlock build`
// and needs nothing from the network: the guest SDK is copied into it.
func New(name, dir string) ([]string, error) {
	if !pluginid.Valid(name) {
		return nil, usagef("%q is not a plugin id: %s", name, pluginid.Rule)
	}
	if err := emptyTarget(dir); err != nil {
		return nil, err
	}
	files, err := projectFiles(name)
	if err != nil {
		return nil, err
	}
	created := false
	if _, err := os.Stat(dir); errors.Is(err, fs.ErrNotExist) {
		created = true
	}
	if err := writeFiles(dir, files); err != nil {
		if created {
			_ = os.RemoveAll(dir)
		}
		return nil, fmt.Errorf("write %s: %w", dir, err)
	}
	names := make([]string, 0, len(files))
	for n := range files {
		names = append(names, n)
	}
	sort.Strings(names)
	return names, nil
}

// emptyTarget refuses a dir that exists and is not an empty folder.
func emptyTarget(dir string) error {
	info, err := os.Stat(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	if !info.IsDir() {
		return usagef("%s exists and is not a folder", dir)
	}
	ents, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	if len(ents) > 0 {
		return usagef("%s exists and is not empty; choose another name or --dir", dir)
	}
	return nil
}

// projectFiles is every file of a new project by slash path.
func projectFiles(name string) (map[string][]byte, error) {
	p := project{ID: name, Tool: ToolName(name), Module: name + ".wasm", SDKModule: SDKModule,
		GoVersion: GoVersion, ZeroSHA256: strings.Repeat("0", 64)}
	files := map[string][]byte{}
	for out, tmpl := range map[string]string{
		"go.mod": "go.mod.tmpl", "main.go": "main.go.tmpl", "main_test.go": "main_test.go.tmpl",
		plugins.ManifestName: "plugin.json.tmpl", "README.md": "README.md.tmpl", "sdk/go.mod": "sdk.go.mod.tmpl",
	} {
		data, err := fill(tmpl, p)
		if err != nil {
			return nil, err
		}
		files[out] = data
	}
	for n, data := range plugins.SDKSource() {
		files["sdk/"+n] = data
	}
	return files, nil
}

// ToolName is the tool a new project for the plugin id declares: the id
// itself when it may name a tool (an id may start with a digit, a tool
// name may not).
func ToolName(id string) string {
	if wire.ValidToolName(id) {
		return id
	}
	return "tool_" + id
}

func fill(name string, p project) ([]byte, error) {
	t, err := template.ParseFS(templates, "template/"+name)
	if err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	if err := t.Execute(&buf, p); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

func writeFiles(dir string, files map[string][]byte) error {
	for name, data := range files {
		path := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(path, data, 0o644); err != nil {
			return err
		}
	}
	return nil
}
