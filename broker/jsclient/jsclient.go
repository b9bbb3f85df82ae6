// Package jsclient is the home of @airlock/client, the JavaScript client of
// PROTOCOL section 12: TypeScript sources in src, the built ES modules in
// dist (committed, so the broker's embedded pages need nothing but Go), the
// JSON Schemas of the contract in schemas, and node --test suites in test.
// The Go side only embeds the built files and tests them against the broker.
package jsclient

// The wire module's fold table and rule vocabulary come from the broker's
// Go values; the TypeScript is then built into dist (npm run build).
//go:generate go run ./internal/genwire

import "embed"

// Dist holds the built package (dist/*.js and *.d.ts) for pages the broker
// serves.
//
//go:embed dist
var Dist embed.FS
