package load

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"slices"
	"strings"

	"github.com/airlock/airlock/broker/v1client"
	"github.com/airlock/airlock/config"
	"github.com/airlock/airlock/config/filecheck"
	"github.com/airlock/airlock/executors/wire"
	"github.com/airlock/airlock/plugins"
	"github.com/airlock/airlock/plugins/bundled"
)

// Baseline is what the calls workload compares the broker with: a
// plugin's module run with plain wazero and the roots to mount it with,
// or why no baseline runs.
type Baseline struct {
	// Label is builtin:ID or the plugin's folder.
	Label  string
	Module []byte
	Roots  map[string]string
	// Skipped says why there is no baseline; "" when there is one.
	Skipped string
	// CacheDir is the broker's compilation cache, so a module the broker
	// compiled is not compiled again; "" for none. The load never creates
	// one.
	CacheDir string
}

// BrokerCacheDir is where `airlock serve` with cfg keeps its
// compilation cache (exec.cache_dir, else DATA/compile-cache), for
// Baseline.CacheDir, or "" when that folder does not exist: the load
// never creates one.
func BrokerCacheDir(cfg *config.Config) string {
	dir := plugins.CacheDir(cfg)
	if info, err := os.Stat(dir); err != nil || !info.IsDir() {
		return ""
	}
	return dir
}

// ChooseBaseline resolves the command's --baseline: a plugin folder,
// builtin:ID, none, or "" for the default. roots maps the names of the
// roots the broker serves to their folders. An explicit choice that
// cannot run is an error; the default (a bundled tool's own module) is
// skipped with a reason instead, so `airlock load calls` without flags
// still runs.
func ChooseBaseline(ctx context.Context, choice string, call wire.Call, roots map[string]string, c *v1client.Client) (Baseline, error) {
	switch {
	case choice == "none":
		return Baseline{Skipped: "--baseline none"}, nil
	case choice == "":
		label, why := defaultBaseline(ctx, call, c)
		if why != "" {
			return Baseline{Skipped: why}, nil
		}
		b, err := loadBaseline(label, call.Tool, roots)
		if err != nil {
			return Baseline{Skipped: err.Error()}, nil
		}
		return b, nil
	}
	return loadBaseline(choice, call.Tool, roots)
}

// defaultBaseline is builtin:ID when the broker's descriptor is a bundled
// plugin that declares the tool, else why there is no default.
func defaultBaseline(ctx context.Context, call wire.Call, c *v1client.Client) (label, why string) {
	id := call.DescriptorID
	m, _, err := readPlugin(bundledPlugin(id))
	if err != nil || !declares(m, call.Tool) {
		return "", fmt.Sprintf("%s is not a bundled tool; --baseline PLUGIN_DIR runs a plugin's module with plain wazero", call.Tool)
	}
	if m.Bounds.MaxRequests > 0 {
		return "", fmt.Sprintf("%s fetches over the network, which the plain-wazero baseline cannot do", call.Tool)
	}
	sts, err := c.Plugins(ctx)
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
func loadBaseline(label, tool string, roots map[string]string) (Baseline, error) {
	var fsys fs.FS
	if id, ok := strings.CutPrefix(label, "builtin:"); ok {
		fsys = bundledPlugin(id)
	} else {
		fsys = filecheck.Dir(label)
	}
	m, module, err := readPlugin(fsys)
	if err != nil {
		return Baseline{}, fmt.Errorf("--baseline %s: %w", label, err)
	}
	if !declares(m, tool) {
		return Baseline{}, fmt.Errorf("--baseline %s: the plugin does not declare %s", label, tool)
	}
	mapped := map[string]string{}
	for _, name := range m.Bounds.Roots {
		dir, ok := roots[name]
		if !ok {
			return Baseline{}, fmt.Errorf("the %s baseline needs the folder the broker serves as its %q root: add --root %s=DIR", label, name, name)
		}
		mapped[name] = dir
	}
	return Baseline{Label: label, Module: module, Roots: mapped}, nil
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
	m, module, err := plugins.ReadFolder(fsys, ".", "")
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
