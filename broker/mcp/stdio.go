package mcp

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// MaxLineBytes bounds one stdio message.
const MaxLineBytes = 16 << 20

// Stdio is the transport of `airlock mcp`: newline-delimited JSON-RPC
// messages read from in and written to out, by the SDK's IOTransport.
//
// The SDK's reader ends the session at the first line that is not a
// JSON-RPC message (it cannot resynchronise a JSON stream), so a
// malformed line would end an agent's session. Lines are therefore
// checked first, with the SDK's own decoder: a good one is passed on
// as it is, a bad one is answered with a JSON-RPC error (parse error, or
// invalid request with the id when one can be read) and the session goes
// on. A line over MaxLineBytes is discarded and answered the same way.
func (s *Server) Stdio(in io.Reader, out io.Writer) sdk.Transport {
	return &stdio{s: s, in: in, out: &lockedWriter{w: out}}
}

type stdio struct {
	s   *Server
	in  io.Reader
	out *lockedWriter
}

// Connect starts the line filter and connects the SDK's transport to it.
func (t *stdio) Connect(ctx context.Context) (sdk.Connection, error) {
	pr, pw := io.Pipe()
	go t.filter(pw)
	return (&sdk.IOTransport{Reader: pr, Writer: t.out, MaxLineLength: MaxLineBytes + 1}).Connect(ctx)
}

// filter copies good lines to pw and answers bad ones, until in ends or
// the connection closes pw's reader.
func (t *stdio) filter(pw *io.PipeWriter) {
	br := bufio.NewReaderSize(t.in, 64<<10)
	for {
		line, over, err := readLine(br, MaxLineBytes)
		if trimmed := bytes.TrimSpace(line); len(trimmed) > 0 || over {
			if reply := check(trimmed, over); reply != nil {
				t.s.o.Metrics.MCPRequests.WithLabelValues("OTHER", "error").Inc()
				if _, werr := t.out.Write(reply); werr != nil {
					err = werr
				}
			} else if _, werr := pw.Write(append(trimmed, '\n')); werr != nil {
				return // the connection closed
			}
		}
		if err != nil {
			if errors.Is(err, io.EOF) {
				err = nil
			}
			pw.CloseWithError(err)
			return
		}
	}
}

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

// check returns nil for a line the SDK reads as one JSON-RPC message,
// else the error response to write.
func check(line []byte, over bool) []byte {
	switch {
	case over:
		return reply(jsonrpc.ID{}, jsonrpc.CodeInvalidRequest, "message over its size bound")
	case line[0] == '[':
		// Batches are not part of the protocol revisions served.
		return reply(jsonrpc.ID{}, jsonrpc.CodeInvalidRequest, "batches are not supported")
	case !json.Valid(line):
		return reply(jsonrpc.ID{}, jsonrpc.CodeParseError, "not one JSON value")
	}
	if _, err := jsonrpc.DecodeMessage(line); err != nil {
		return reply(idOf(line), jsonrpc.CodeInvalidRequest, "not a JSON-RPC 2.0 message")
	}
	return nil
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

// lockedWriter lets the SDK's writes and the filter's replies share out,
// one whole message at a time. Close leaves out open: it is stdout.
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

func (l *lockedWriter) Close() error { return nil }
