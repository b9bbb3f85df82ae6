package metrics

import (
	"runtime"
	"runtime/debug"

	"github.com/prometheus/client_golang/prometheus"
)

// BuildInfo says which binary is running: what `airlock version` prints
// and airlock_build_info carries.
type BuildInfo struct {
	Version       string // a release (v1.2.3), else "dev"
	Commit        string // the VCS revision, "-dirty" when built from a modified tree, else "unknown"
	GoVersion     string // the toolchain that built the binary (go1.26.8)
	WazeroVersion string // the wazero module linked in (v1.12.0), else "unknown"
}

// Unknown stands for a build fact the binary does not record (a test
// binary has no VCS revision).
const Unknown = "unknown"

// ReadBuildInfo reads the binary's build info. stamped is the version
// given at link time (-ldflags "-X main.version=…"); when it is empty or
// "dev", the main module's version is used if the binary was built from a
// released module (go install …@v1.2.3), else "dev".
func ReadBuildInfo(stamped string) BuildInfo {
	b := BuildInfo{Version: stamped, Commit: Unknown, GoVersion: runtime.Version(), WazeroVersion: Unknown}
	if b.Version == "" {
		b.Version = "dev"
	}
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return b
	}
	if b.Version == "dev" && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		b.Version = bi.Main.Version
	}
	if bi.GoVersion != "" {
		b.GoVersion = bi.GoVersion
	}
	dirty := false
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			b.Commit = s.Value
		case "vcs.modified":
			dirty = s.Value == "true"
		}
	}
	if dirty && b.Commit != Unknown {
		b.Commit += "-dirty"
	}
	for _, d := range bi.Deps {
		if d.Path == "github.com/tetratelabs/wazero" {
			if d.Replace != nil && d.Replace.Version != "" {
				d = d.Replace
			}
			if d.Version != "" && d.Version != "(devel)" {
				b.WazeroVersion = d.Version
			}
		}
	}
	return b
}

// SetBuildInfo makes b the one airlock_build_info series (value 1). New
// records ReadBuildInfo(""); a command that stamps its version at link
// time passes what it read.
func (r *Registry) SetBuildInfo(b BuildInfo) {
	r.buildInfo.Reset()
	r.buildInfo.With(prometheus.Labels{
		"version": b.Version, "commit": b.Commit, "goversion": b.GoVersion, "wazero_version": b.WazeroVersion,
	}).Set(1)
}
