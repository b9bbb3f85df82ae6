package mcp

import (
	"io"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// Stdio is the transport of `airlock mcp`: newline-delimited JSON-RPC
// messages read from in and written to out.
func Stdio(in io.ReadCloser, out io.WriteCloser) sdk.Transport {
	return &sdk.IOTransport{Reader: in, Writer: out}
}
