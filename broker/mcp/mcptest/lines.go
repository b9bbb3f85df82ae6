package mcptest

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
)

// Lines is the least an MCP client over stdio can be: one JSON-RPC
// request written as a line, one line read back, one call at a time. The
// benchmarks use it beside the SDK's client so that what the server costs
// is seen without what the SDK's client costs (its JSON codec allocates a
// 32 KiB buffer for each value it unmarshals).
type Lines struct {
	w    io.Writer
	r    *bufio.Reader
	id   int64
	buf  []byte
	meta string // the _meta member every request carries, after Discover
}

// NewLines is a client writing requests to w and reading responses from r.
func NewLines(w io.Writer, r io.Reader) *Lines {
	return &Lines{w: w, r: bufio.NewReaderSize(r, 64<<10)}
}

// Initialize opens the session (initialize, then
// notifications/initialized).
func (l *Lines) Initialize() error {
	if _, err := l.request("initialize", `{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"lines","version":"1"}}`); err != nil {
		return err
	}
	_, err := io.WriteString(l.w, `{"jsonrpc":"2.0","method":"notifications/initialized"}`+"\n")
	return err
}

// Discover starts at Stateless instead (server/discover); every request
// after it carries in its _meta what the SDK's client puts there: the
// revision, the client and its capabilities.
func (l *Lines) Discover() error {
	l.meta = `"_meta":{"io.modelcontextprotocol/clientCapabilities":{"roots":{"listChanged":true}},"io.modelcontextprotocol/clientInfo":{"name":"lines","version":"1"},` +
		`"io.modelcontextprotocol/protocolVersion":"` + Stateless + `"}`
	_, err := l.request("server/discover", "{}")
	return err
}

// Call is tools/call of name with args (a JSON object); a JSON-RPC error
// or a tool error (isError) is an error. The result is valid until the
// next request.
func (l *Lines) Call(name string, args json.RawMessage) (json.RawMessage, error) {
	params := append(append(append(append([]byte(`{"name":`), strconv.Quote(name)...), `,"arguments":`...), args...), '}')
	res, err := l.request("tools/call", string(params))
	if err != nil {
		return nil, err
	}
	var r struct {
		IsError bool `json:"isError"`
	}
	if err := json.Unmarshal(res, &r); err != nil {
		return nil, err
	}
	if r.IsError {
		return nil, fmt.Errorf("tool error: %s", res)
	}
	return res, nil
}

// request writes one request and reads lines until its response,
// skipping notifications.
func (l *Lines) request(method, params string) (json.RawMessage, error) {
	l.id++
	b := append(l.buf[:0], `{"jsonrpc":"2.0","id":`...)
	b = strconv.AppendInt(b, l.id, 10)
	b = append(append(append(b, `,"method":"`...), method...), `","params":`...)
	if l.meta != "" {
		// params is an object: the _meta goes in as its first member.
		b = append(append(b, '{'), l.meta...)
		if params = params[1:]; params != "}" {
			b = append(b, ',')
		}
	}
	b = append(append(b, params...), "}\n"...)
	l.buf = b
	if _, err := l.w.Write(b); err != nil {
		return nil, err
	}
	for {
		line, err := l.r.ReadSlice('\n')
		if err != nil {
			return nil, err
		}
		var resp struct {
			ID     *int64          `json:"id"`
			Result json.RawMessage `json:"result"`
			Error  *struct {
				Code    int    `json:"code"`
				Message string `json:"message"`
			} `json:"error"`
		}
		if err := json.Unmarshal(line, &resp); err != nil {
			return nil, fmt.Errorf("not JSON: %q", line)
		}
		switch {
		case resp.ID == nil:
			continue // a notification
		case *resp.ID != l.id:
			return nil, fmt.Errorf("response to %d, want %d", *resp.ID, l.id)
		case resp.Error != nil:
			return nil, fmt.Errorf("%s: error %d: %s", method, resp.Error.Code, resp.Error.Message)
		case resp.Result == nil:
			return nil, errors.New(method + ": no result")
		}
		return resp.Result, nil
	}
}
