package plugins

import (
	"embed"
	"io/fs"
	"strings"
)

// sdkFiles is the guest SDK's source as this binary was built with it.
//
//go:embed sdk/*.go sdk/ABI.md
var sdkFiles embed.FS

// SDKSource returns the guest SDK's files (its Go source without tests,
// and sdk/ABI.md) by name, so `airlock new` can write into a project the very
// SDK this binary's executors speak to. See RATIONALE.md, "Why does
// `airlock new` copy the guest SDK into the project?".
func SDKSource() map[string][]byte {
	out := map[string][]byte{}
	ents, _ := fs.ReadDir(sdkFiles, "sdk")
	for _, e := range ents {
		if strings.HasSuffix(e.Name(), "_test.go") {
			continue
		}
		data, _ := fs.ReadFile(sdkFiles, "sdk/"+e.Name())
		out[e.Name()] = data
	}
	return out
}
