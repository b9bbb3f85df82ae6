// Package e2e is the end-to-end suite of the airlock command: it builds
// the binary once per run and drives it as its users do, over real
// sockets, with a real browser and real MCP and Node clients. It imports
// the libraries only for their vocabularies and test kits, never the
// command's own code.
package e2e
