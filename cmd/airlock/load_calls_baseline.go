package main

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"slices"
	"strings"

	"github.com/airlock/airlock/executors/wire"
	"github.com/airlock/airlock/plugins"
	"github.com/airlock/airlock/plugins/bundled"
)

// baselineChoice is what --baseline resolved to: a plugin's module and
// the roots to mount it with, or why no baseline runs.
type baselineChoice struct {
	label   string // builtin:ID or the folder
	module  []byte
	roots   map[string]string
	skipped string
	// cacheDir is the broker's compilation cache, "" when it has none.
	cacheDir string
}

// brokerCacheDir is where `airlock serve` with the same settings keeps
// its compilation cache (exec.cache_dir, else DATA/compile-cache), or ""
// when that folder does not exist: the load never creates one.
func brokerCacheDir(sf *settingsFlags) (string, error) {
	cfg, err := sf.load()
	if err != nil {
		return "", err
	}
	dir := plugins.CacheDir(cfg)
	if info, err := os.Stat(dir); err != nil || !info.IsDir() {
		return "", nil
	}
	return dir, nil
}

// chooseBaseline resolves --baseline. An explicit choice that cannot run
// is an error; the default (a bundled tool's own module) is skipped with
// a reason instead, so `airlock load calls` without flags still runs.
func chooseBaseline(ctx context.Context, choice string, call wire.Call, roots rootsFlag, c *v1Client) (baselineChoice, error) {
	switch {
	case choice == "none":
		return baselineChoice{skipped: "--baseline none"}, nil
	case choice == "":
		label, why := defaultBaseline(ctx, call, c)
		if why != "" {
			return baselineChoice{skipped: why}, nil
		}
		b, err := loadBaseline(label, call.Tool, roots)
		if err != nil {
			return baselineChoice{skipped: err.Error()}, nil
		}
		return b, nil
	}
	return loadBaseline(choice, call.Tool, roots)
}

// defaultBaseline is builtin:ID when the broker's descriptor is a bundled
// plugin that declares the tool, else why there is no default.
func defaultBaseline(ctx context.Context, call wire.Call, c *v1Client) (label, why string) {
	id := call.DescriptorID
	m, _, err := readPlugin(bundledPlugin(id))
	if err != nil || !declares(m, call.Tool) {
		return "", fmt.Sprintf("%s is not a bundled tool; --baseline PLUGIN_DIR runs a plugin's module with plain wazero", call.Tool)
	}
	if m.Bounds.MaxRequests > 0 {
		return "", fmt.Sprintf("%s fetches over the network, which the plain-wazero baseline cannot do", call.Tool)
	}
	sts, err := c.plugins(ctx)
	if err != nil {
		return "", fmt.Sprintf("cannot tell whether the broker's %s is the bundled one: %v", id, err)
	}
	for _, s := range sts {
		if s.ID == id && s.Origin != plugins.OriginBuiltin {
			return "", fmt.Sprintf("the broker's %s plugin comes from its plugins folder, not the binary; --baseline PLUGIN_DIR runs that module", id)
		}
	}
	return "builtin:" + id, ""
}

// loadBaseline reads builtin:ID or a plugin folder, checks its sha256
// and that it declares tool, and maps the roots its bounds name.
func loadBaseline(label, tool string, roots rootsFlag) (baselineChoice, error) {
	var fsys fs.FS
	if id, ok := strings.CutPrefix(label, "builtin:"); ok {
		fsys = bundledPlugin(id)
	} else {
		fsys = os.DirFS(label)
	}
	m, module, err := readPlugin(fsys)
	if err != nil {
		return baselineChoice{}, fmt.Errorf("--baseline %s: %w", label, err)
	}
	if !declares(m, tool) {
		return baselineChoice{}, fmt.Errorf("--baseline %s: the plugin does not declare %s", label, tool)
	}
	mapped := map[string]string{}
	for _, name := range m.Bounds.Roots {
		dir, ok := roots[name]
		if !ok {
			return baselineChoice{}, fmt.Errorf("the %s baseline needs the folder the broker serves as its %q root: add --root %s=DIR", label, name, name)
		}
		mapped[name] = dir
	}
	return baselineChoice{label: label, module: module, roots: mapped}, nil
}

// bundledPlugin is the folder of a plugin embedded in this binary (an
// empty one for an unknown id).
func bundledPlugin(id string) fs.FS {
	sub, err := fs.Sub(bundled.Plugins(), id)
	if err != nil {
		return fsEmpty{}
	}
	return sub
}

// readPlugin reads plugin.json and its module the way the catalog does,
// sha256 included: a baseline must run the module the manifest vouches
// for.
func readPlugin(fsys fs.FS) (plugins.Manifest, []byte, error) {
	data, err := fs.ReadFile(fsys, plugins.ManifestName)
	if err != nil {
		return plugins.Manifest{}, nil, err
	}
	m, err := plugins.ParseManifest(data)
	if err != nil {
		return m, nil, fmt.Errorf("%s: %w", plugins.ManifestName, err)
	}
	module, err := fs.ReadFile(fsys, m.Module)
	if err != nil {
		return m, nil, err
	}
	if plugins.HashModule(module) != m.SHA256 {
		return m, nil, fmt.Errorf("%s does not match the sha256 in %s", m.Module, plugins.ManifestName)
	}
	return m, module, nil
}

func declares(m plugins.Manifest, tool string) bool {
	return slices.ContainsFunc(m.Tools, func(t wire.Tool) bool { return t.Name == tool })
}

// fsEmpty is a folder with nothing in it.
type fsEmpty struct{}

func (fsEmpty) Open(name string) (fs.File, error) {
	return nil, &fs.PathError{Op: "open", Path: name, Err: fs.ErrNotExist}
}
