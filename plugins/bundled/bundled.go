// Package bundled holds the plugins embedded in the airlock binary and the
// sample notes `airlock demo` serves. Each plugin folder holds its Go
// source, plugin.json and the module built from that source; see
// README-build.md for how to rebuild a module.
package bundled

import (
	"embed"
	"io/fs"
)

//go:embed notes/plugin.json notes/notes.wasm web/plugin.json web/web.wasm
var pluginFiles embed.FS

//go:embed samplenotes
var sampleNotes embed.FS

// Plugins is the bundled plugin folders (notes, web) as the catalog reads
// them.
func Plugins() fs.FS { return pluginFiles }

// SampleNotes is the notes folder of `airlock demo`.
func SampleNotes() fs.FS {
	sub, err := fs.Sub(sampleNotes, "samplenotes")
	if err != nil {
		panic(err) // the folder is embedded at build time
	}
	return sub
}
