package mcp

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"strconv"
	"sync"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/airlock/airlock/executors/wire"
	"github.com/airlock/airlock/metrics"
)

// MaxLineBytes bounds one stdio message.
const MaxLineBytes = 16 << 20

// Stdio is the transport of `airlock mcp`: newline-delimited JSON-RPC
// messages read from in and written to out. Requests and result responses
// are decoded and encoded here (decodeRequest, appendMessage), everything
// else by the SDK's codec (jsonrpc.DecodeMessage, jsonrpc.EncodeMessage).
//
// It is not the SDK's IOTransport because that one ends the session at the
// first line that is not a JSON-RPC message (it decodes a JSON stream and
// cannot resynchronise), so one malformed line would end an agent's
// session. Here a bad line (not JSON, a batch, not JSON-RPC 2.0, over
// MaxLineBytes) is answered with a JSON-RPC error (parse error, or invalid
// request with the id when one can be read) and the session goes on.
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
			} else if !c.hand(read{msg: msg}) {
				return
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

func (c *lineConn) Write(_ context.Context, msg jsonrpc.Message) error {
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

// decode reads a line as one JSON-RPC message, or returns the error
// response to write instead.
func decode(line []byte, over bool) (jsonrpc.Message, []byte) {
	switch {
	case over:
		return nil, reply(jsonrpc.ID{}, jsonrpc.CodeInvalidRequest, "message over its size bound")
	case line[0] == '[':
		// Batches are not part of the protocol revisions served.
		return nil, reply(jsonrpc.ID{}, jsonrpc.CodeInvalidRequest, "batches are not supported")
	}
	if req, ok := decodeRequest(line); ok {
		return req, nil
	}
	msg, err := jsonrpc.DecodeMessage(line)
	switch {
	case err == nil:
		return msg, nil
	case !json.Valid(line): // only a line that failed is looked at again
		return nil, reply(jsonrpc.ID{}, jsonrpc.CodeParseError, "not one JSON value")
	}
	return nil, reply(idOf(line), jsonrpc.CodeInvalidRequest, "not a JSON-RPC 2.0 message")
}

// decodeRequest is the SDK's decoding of a well-formed request (a
// message with a "method"), done here: the SDK's codec allocates a 32 KiB
// read buffer for each of the two values it unmarshals, which made the
// collector the largest cost of a call over stdio (see RATIONALE.md, "Why
// does `airlock mcp` decode requests itself?"). The line goes through
// the broker's one strict member walk (wire.EachMember: valid JSON,
// unique keys, bounded depth), which slices its top-level members out in
// place (RATIONALE.md, "Why does `airlock mcp` slice requests and write
// responses itself?").
// Anything it is not sure of (not an object, a duplicate or case-folded
// key, deeper than wire.MaxDepth, a version other than "2.0", an id or
// method of another type, no method: a response) is left to
// jsonrpc.DecodeMessage, so errors and responses read exactly as
// the SDK reads them; FuzzDecode holds the two to the same result.
//
// The request's params alias line, which is never reused.
func decodeRequest(line []byte) (*jsonrpc.Request, bool) {
	var version, method, rawID, params []byte
	if wire.EachMember(line, wire.MaxDepth, func(key []byte, val json.RawMessage) {
		switch string(key) {
		case "jsonrpc":
			version = val
		case "method":
			method = val
		case "id":
			rawID = val
		case "params":
			params = val
		}
	}) != nil || string(version) != `"2.0"` || method == nil {
		return nil, false
	}
	name, ok := plainString(method)
	if !ok {
		return nil, false
	}
	id, ok := requestID(rawID)
	if !ok {
		return nil, false
	}
	return &jsonrpc.Request{ID: id, Method: name, Params: params}, true
}

// plainString is the JSON string raw when it needs no decoding (no
// escape, valid UTF-8).
func plainString(raw []byte) (string, bool) {
	if len(raw) < 2 || raw[0] != '"' || bytes.IndexByte(raw, '\\') >= 0 || !utf8.Valid(raw) {
		return "", false
	}
	return string(raw[1 : len(raw)-1]), true
}

// requestID is the id raw (absent or null: none), as jsonrpc.MakeID makes
// it from what the SDK's codec decodes: a plain string, or an integer
// short enough to be exact as the float64 the codec reads numbers as.
func requestID(raw []byte) (jsonrpc.ID, bool) {
	if raw == nil || string(raw) == "null" {
		return jsonrpc.ID{}, true
	}
	if s, ok := plainString(raw); ok {
		id, err := jsonrpc.MakeID(s)
		return id, err == nil
	}
	if len(raw) > 15 {
		return jsonrpc.ID{}, false
	}
	n, err := strconv.ParseInt(string(raw), 10, 64)
	if err != nil {
		return jsonrpc.ID{}, false
	}
	id, err := jsonrpc.MakeID(float64(n))
	return id, err == nil
}

// idOf is the request id of a message that is otherwise invalid, when it
// has a usable one.
func idOf(line []byte) jsonrpc.ID {
	var m struct {
		ID any `json:"id"`
	}
	if json.Unmarshal(line, &m) != nil {
		return jsonrpc.ID{}
	}
	id, err := jsonrpc.MakeID(m.ID)
	if err != nil {
		return jsonrpc.ID{}
	}
	return id
}

// reply encodes an error response with the SDK's codec; the message is
// static text, never the input. Without a usable id the response carries
// "id":null, as JSON-RPC 2.0 requires (the SDK's codec would leave the
// member out).
func reply(id jsonrpc.ID, code int64, msg string) []byte {
	e := &jsonrpc.Error{Code: code, Message: msg}
	var data []byte
	if id.IsValid() {
		data, _ = jsonrpc.EncodeMessage(&jsonrpc.Response{ID: id, Error: e})
	} else {
		data, _ = json.Marshal(struct {
			V     string         `json:"jsonrpc"`
			ID    any            `json:"id"`
			Error *jsonrpc.Error `json:"error"`
		}{"2.0", nil, e})
	}
	return append(data, '\n')
}
