package plugins

import "errors"

// Sentinel errors of the catalog.
var (
	// ErrNoPluginsDir is returned by New when the plugins folder is not a
	// directory.
	ErrNoPluginsDir = errors.New("plugins: the plugins folder does not exist or is not a directory")
)
