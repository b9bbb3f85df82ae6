package session

import (
	"bufio"
	"net"
	"net/http"
)

// The bufio buffers a view's connection keeps for its whole life, where
// net/http hands a hijacked connection 4 KiB for each. A view mostly
// receives what its host sends, and sends little; the host keeps net/http's
// (RATIONALE.md, "Why does a view's socket have smaller buffers?").
const (
	// viewReadBuffer holds what a view sends: its hello and requests
	// read in one system call up to this size; a larger payload is read
	// straight into the frame's own buffer past it.
	viewReadBuffer = 1 << 10
	// viewWriteBuffer holds one frame to a view, header and payload, so
	// a frame up to this size is one write; a larger one is two.
	viewWriteBuffer = 2 << 10
)

// smallBuffers is the ResponseWriter websocket.Accept hijacks for a view:
// the connection comes back with bufio buffers of the sizes above in place
// of net/http's. Bytes net/http already read past the upgrade request (a
// client that did not wait for 101) stay in net/http's buffers, which are
// then kept.
type smallBuffers struct{ http.ResponseWriter }

// Unwrap lets http.ResponseController reach the server's writer.
func (w smallBuffers) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// Hijack takes the connection over with small buffers (see smallBuffers).
func (w smallBuffers) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	c, brw, err := http.NewResponseController(w.ResponseWriter).Hijack()
	if err != nil || brw.Reader.Buffered() > 0 || brw.Writer.Buffered() > 0 {
		return c, brw, err
	}
	return c, bufio.NewReadWriter(bufio.NewReaderSize(c, viewReadBuffer), bufio.NewWriterSize(c, viewWriteBuffer)), nil
}
