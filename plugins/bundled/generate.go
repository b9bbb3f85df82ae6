package bundled

// Rebuild the bundled modules and their plugin.json sha256 from source.
//go:generate go run ./internal/rebuild
