package mcp

import (
	"bytes"
	"encoding/json"
	"errors"
	"strconv"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"

	"github.com/airlock/airlock/executors/wire"
)

// maxMessageDepth bounds the nesting of an MCP message: a tool call's
// arguments sit two levels down (params.arguments), and may themselves
// nest as deep as a call envelope's args (wire.MaxDepth).
const maxMessageDepth = wire.MaxDepth + 2

// decode reads one MCP message (a stdio line, a /mcp POST body), or
// returns the error response to write instead. Every message goes through
// the broker's one strict walk (wire.EachMember: one JSON object, valid
// UTF-8, bounded depth, no two keys equal or equal under folding at any
// depth, PROTOCOL section 1.7) before anything reads a value from it, so
// a policy proxy or an audit reader that keeps the first of two keys
// cannot check a different call than the one that runs: a duplicate is
// an invalid request. A well-formed request is then sliced from the
// walk's members (members.request); anything else the walk let through
// is decoded by the SDK's codec (jsonrpc.DecodeMessage), so responses and
// odd requests read exactly as the SDK reads them.
//
// The request's params alias line, which is never reused.
func decode(line []byte, over bool) (jsonrpc.Message, []byte) {
	switch {
	case over:
		return nil, reply(jsonrpc.ID{}, jsonrpc.CodeInvalidRequest, "message over its size bound")
	case line[0] == '[':
		// Batches are not part of the protocol revisions served.
		return nil, reply(jsonrpc.ID{}, jsonrpc.CodeInvalidRequest, "batches are not supported")
	}
	m, err := split(line)
	if err != nil {
		return nil, walkReply(err)
	}
	if req, ok := m.request(); ok {
		return req, nil
	}
	if msg, err := jsonrpc.DecodeMessage(line); err == nil {
		return msg, nil
	}
	return nil, reply(m.replyID(), jsonrpc.CodeInvalidRequest, "not a JSON-RPC 2.0 message")
}

// members are the top-level members of a message that the strict walk
// passed, sliced in place (RATIONALE.md, "Why does `airlock mcp` slice
// requests and write responses itself?").
type members struct{ version, method, id, params []byte }

// split walks line and takes its members.
func split(line []byte) (members, error) {
	var m members
	err := wire.EachMember(line, maxMessageDepth, func(key []byte, val json.RawMessage) {
		switch string(key) {
		case "jsonrpc":
			m.version = val
		case "method":
			m.method = val
		case "id":
			m.id = val
		case "params":
			m.params = val
		}
	})
	return m, err
}

// walkReply is the error response to a message the strict walk refused:
// not JSON is a parse error; a duplicate key, too deep a nesting, or a
// value that is not an object is an invalid request. Its id is null: the
// id of a message whose keys are ambiguous is ambiguous too.
func walkReply(err error) []byte {
	switch {
	case errors.Is(err, wire.ErrDuplicateKey):
		return reply(jsonrpc.ID{}, jsonrpc.CodeInvalidRequest, "duplicate key")
	case errors.Is(err, wire.ErrTooDeep):
		return reply(jsonrpc.ID{}, jsonrpc.CodeInvalidRequest, "nested too deeply")
	case errors.Is(err, wire.ErrNotObject):
		return reply(jsonrpc.ID{}, jsonrpc.CodeInvalidRequest, "not a JSON-RPC 2.0 message")
	}
	return reply(jsonrpc.ID{}, jsonrpc.CodeParseError, "not one JSON value")
}

// request is the SDK's decoding of a well-formed request (a message with
// a "method"), done here: the SDK's codec allocates a 32 KiB read buffer
// for each of the two values it unmarshals, which made the collector the
// largest cost of a call over stdio (see RATIONALE.md, "Why does `airlock
// mcp` decode requests itself?"). Anything it is not sure of (a version
// other than "2.0", an id or method of another type, no method: a
// response) is left to jsonrpc.DecodeMessage; FuzzDecode holds the two to
// the same result.
func (m members) request() (*jsonrpc.Request, bool) {
	if string(m.version) != `"2.0"` || m.method == nil {
		return nil, false
	}
	name, ok := plainString(m.method)
	if !ok {
		return nil, false
	}
	id, ok := requestID(m.id)
	if !ok {
		return nil, false
	}
	return &jsonrpc.Request{ID: id, Method: name, Params: m.params}, true
}

// decodeRequest is split and request.
func decodeRequest(line []byte) (*jsonrpc.Request, bool) {
	m, err := split(line)
	if err != nil {
		return nil, false
	}
	return m.request()
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

// replyID is the id of a message that is otherwise invalid, when it has
// a usable one: its "id" member (the walk found at most one), decoded as
// the SDK's codec decodes it.
func (m members) replyID() jsonrpc.ID {
	var v any
	if m.id == nil || json.Unmarshal(m.id, &v) != nil {
		return jsonrpc.ID{}
	}
	id, err := jsonrpc.MakeID(v)
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
