package mcp

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"io"
	"strconv"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/airlock/airlock/metrics"
)

// MaxLineBytes bounds one stdio message.
const MaxLineBytes = 16 << 20

// Stdio is the transport of `airlock mcp`: newline-delimited JSON-RPC
// messages read from in and written to out. Every line goes through the
// strict walk (decode); requests and result responses are decoded and
// encoded here (members.request, appendMessage), everything else by the
// SDK's codec (jsonrpc.DecodeMessage, jsonrpc.EncodeMessage).
//
// It is not the SDK's IOTransport because that one ends the session at the
// first line that is not a JSON-RPC message (it decodes a JSON stream and
// cannot resynchronise), so one malformed line would end an agent's
// session. Here a bad line (not JSON, a batch, a duplicate key, not
// JSON-RPC 2.0, over MaxLineBytes) is answered with a JSON-RPC error
// (parse error, or invalid request with the id when one can be read) and
// the session goes on.
func (s *Server) Stdio(in io.Reader, out io.Writer) sdk.Transport {
	return &stdio{s: s, in: in, out: out}
}

type stdio struct {
	s   *Server
	in  io.Reader
	out io.Writer
}

// Connect starts reading in; it is called once per session.
func (t *stdio) Connect(context.Context) (sdk.Connection, error) {
	c := &lineConn{s: t.s, out: t.out, incoming: make(chan read), closed: make(chan struct{})}
	go c.readLoop(bufio.NewReaderSize(t.in, 64<<10))
	return c, nil
}

// lineConn is one stdio session's connection.
type lineConn struct {
	s         *Server
	mu        sync.Mutex // one whole message at a time on out
	out       io.Writer
	incoming  chan read
	closed    chan struct{}
	closeOnce sync.Once
	calls     inflight[jsonrpc.ID] // requests handed to the SDK and not answered
}

type read struct {
	msg jsonrpc.Message
	err error
}

// readLoop hands each good line to Read and answers each bad one, until
// in ends (or fails) or the connection closes. Like the SDK's own stdio
// reader it stays blocked in a read of in after Close until in ends: a
// read of stdin cannot be interrupted portably.
func (c *lineConn) readLoop(br *bufio.Reader) {
	for {
		line, over, err := readLine(br, MaxLineBytes)
		if trimmed := bytes.TrimSpace(line); len(trimmed) > 0 || over {
			msg, reply := decode(trimmed, over)
			if reply != nil {
				c.s.o.Metrics.MCPRequests.WithLabelValues(metrics.Other, "error").Inc()
				if werr := c.write(reply); werr != nil && err == nil {
					err = werr
				}
			} else {
				c.track(msg)
				if !c.hand(read{msg: msg}) {
					return
				}
			}
		}
		if err != nil {
			c.hand(read{err: err})
			return
		}
	}
}

// hand gives r to Read; false once the connection is closed.
func (c *lineConn) hand(r read) bool {
	select {
	case c.incoming <- r:
		return true
	case <-c.closed:
		return false
	}
}

func (c *lineConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	select {
	case <-ctx.Done():
		return nil, ctx.Err()
	case r := <-c.incoming:
		return r.msg, r.err
	case <-c.closed:
		return nil, io.EOF
	}
}

// track notes a request handed to the SDK, and a cancel of one, before
// the SDK sees it: an answer written once the cancel is in is held back.
func (c *lineConn) track(msg jsonrpc.Message) {
	if id, ok := callID(msg); ok {
		c.calls.open(id)
	} else if id, ok := cancelledID(msg); ok {
		c.calls.cancel(id)
	}
}

// Write writes msg, except the answer to a request the client cancelled
// (cancel.go).
func (c *lineConn) Write(ctx context.Context, msg jsonrpc.Message) error {
	if r, ok := msg.(*jsonrpc.Response); ok && c.calls.close(r.ID) {
		c.s.o.Logger.DebugContext(ctx, logHeldBack)
		return nil
	}
	buf := lines.Get().(*[]byte)
	line, err := appendMessage((*buf)[:0], msg)
	if err == nil {
		err = c.write(line)
	}
	if cap(line) <= maxPooledLine {
		*buf = line[:0]
		lines.Put(buf)
	}
	return err
}

// lines holds the buffers messages are encoded into; one over
// maxPooledLine (a large result) is left to the collector rather than kept.
var lines = sync.Pool{New: func() any { b := make([]byte, 0, 4<<10); return &b }}

const maxPooledLine = 64 << 10

// appendMessage appends msg and a newline to b, as the SDK's codec
// (jsonrpc.EncodeMessage) writes it. A result response with a numeric id
// (every tools/call answered) is written directly: its result is JSON the
// SDK has just encoded (compact and valid), which the codec would only
// scan and copy again (RATIONALE.md, "Why does `airlock mcp` slice
// requests and write responses itself?"). Anything else goes through the
// codec. FuzzEncode holds the two to the same bytes.
func appendMessage(b []byte, msg jsonrpc.Message) ([]byte, error) {
	if r, ok := msg.(*jsonrpc.Response); ok && r.Error == nil && len(r.Result) > 0 {
		if id, ok := r.ID.Raw().(int64); ok {
			b = append(b, `{"jsonrpc":"2.0","id":`...)
			b = strconv.AppendInt(b, id, 10)
			b = append(append(b, `,"result":`...), r.Result...)
			return append(b, "}\n"...), nil
		}
	}
	data, err := jsonrpc.EncodeMessage(msg)
	if err != nil {
		return b, err
	}
	return append(append(b, data...), '\n'), nil
}

func (c *lineConn) write(line []byte) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	_, err := c.out.Write(line)
	return err
}

// Close ends the session; out (stdout) stays open.
func (c *lineConn) Close() error {
	c.closeOnce.Do(func() { close(c.closed) })
	return nil
}

func (c *lineConn) SessionID() string { return "" }

// readLine reads one line without its newline; a line over max is
// discarded to its end and reported over.
func readLine(br *bufio.Reader, max int) (line []byte, over bool, err error) {
	for {
		chunk, err := br.ReadSlice('\n')
		if !over {
			if len(line)+len(chunk) > max+1 {
				over, line = true, nil
			} else {
				line = append(line, chunk...)
			}
		}
		if !errors.Is(err, bufio.ErrBufferFull) {
			return bytes.TrimSuffix(line, []byte("\n")), over, err
		}
	}
}
