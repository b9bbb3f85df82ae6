// Package v1client is a Go client of the broker's /v1 API (the tool
// catalog, the plugins' statuses and calls) with the launch token: what
// `airlock call`, `tools --broker`, `demo` and `load calls` speak. It sits
// beside localclient, the client of /local, and like it imports no
// package of the broker's server.
package v1client

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/airlock/airlock/broker/contract"
	"github.com/airlock/airlock/executors/wire"
)

// maxBody bounds an answer read into memory.
const maxBody = 64 << 20

// Client speaks /v1 to one broker.
type Client struct {
	// Base is the broker's URL without a trailing slash, for example
	// http://127.0.0.1:7420.
	Base string
	// Token is the launch token.
	Token string
	// HTTP is the client to use; nil means http.DefaultClient.
	HTTP *http.Client
	// Socket, when set, is the broker's Unix socket that HTTP dials (see
	// UnixTransport), with Base UnixBase; clients that dial for
	// themselves (the load tool) read it.
	Socket string
}

// Tools is GET /v1/tools: the admitted descriptors.
func (c *Client) Tools(ctx context.Context) ([]wire.Descriptor, error) {
	var out struct {
		Descriptors []wire.Descriptor `json:"descriptors"`
	}
	err := c.do(ctx, http.MethodGet, "/v1/tools", nil, &out)
	return out.Descriptors, err
}

// Plugins is GET /v1/plugins: every plugin, admitted or refused.
func (c *Client) Plugins(ctx context.Context) ([]wire.PluginStatus, error) {
	var out struct {
		Plugins []wire.PluginStatus `json:"plugins"`
	}
	err := c.do(ctx, http.MethodGet, "/v1/plugins", nil, &out)
	return out.Plugins, err
}

// Call posts one call envelope (POST /v1/calls) and returns the answer,
// validated, and its raw bytes.
func (c *Client) Call(ctx context.Context, call wire.Call) (wire.Answer, json.RawMessage, error) {
	body, err := json.Marshal(call)
	if err != nil {
		return wire.Answer{}, nil, err
	}
	var raw json.RawMessage
	if err := c.do(ctx, http.MethodPost, "/v1/calls", body, &raw); err != nil {
		return wire.Answer{}, nil, err
	}
	a, err := wire.ParseAnswer(raw)
	if err != nil {
		return wire.Answer{}, raw, fmt.Errorf("the broker's answer is not a valid envelope: %w", err)
	}
	return a, raw, nil
}

// do sends a request and decodes a 2xx JSON answer into out. A call
// refused as 400 still carries an answer envelope, so 400 is decoded too.
func (c *Client) do(ctx context.Context, method, path string, body []byte, out any) error {
	req, err := http.NewRequestWithContext(ctx, method, c.Base+path, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set(contract.TokenHeader, c.Token)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	hc := c.HTTP
	if hc == nil {
		hc = http.DefaultClient
	}
	resp, err := hc.Do(req)
	if err != nil {
		return fmt.Errorf("broker unreachable: %w", err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxBody))
	if err != nil {
		return err
	}
	if resp.StatusCode/100 != 2 && resp.StatusCode != http.StatusBadRequest {
		return &StatusError{Status: resp.StatusCode, status: resp.Status, body: strings.TrimSpace(string(data))}
	}
	if raw, ok := out.(*json.RawMessage); ok {
		// The caller validates it (Call: wire.ParseAnswer), in one pass
		// instead of a second decode and copy here.
		*raw = data
		return nil
	}
	if err := json.Unmarshal(data, out); err != nil {
		return fmt.Errorf("broker answered %s with unreadable JSON", resp.Status)
	}
	return nil
}

// StatusError is an answer of the broker that is neither 2xx nor a
// call's 400: a refused launch token (401), a route refused (403, 404),
// an overloaded or draining broker (503). Status lets a command tell a
// refused credential from a failure.
type StatusError struct {
	Status       int
	status, body string
}

func (e *StatusError) Error() string { return fmt.Sprintf("broker answered %s: %s", e.status, e.body) }

// NewCall is a call of tool with args, its descriptorId and boundsEcho
// filled from the catalog ds: the descriptor that declares tool, or the
// one named descriptor when several do. Its callId is fresh.
func NewCall(ds []wire.Descriptor, tool, descriptor string, args json.RawMessage) (wire.Call, error) {
	var match []wire.Descriptor
	for _, d := range ds {
		if _, ok := d.Tool(tool); ok && (descriptor == "" || d.DescriptorID == descriptor) {
			match = append(match, d)
		}
	}
	switch {
	case len(match) == 0 && descriptor != "":
		return wire.Call{}, fmt.Errorf("no admitted descriptor %q declares tool %q", descriptor, tool)
	case len(match) == 0:
		return wire.Call{}, fmt.Errorf("no admitted descriptor declares tool %q (airlock tools lists them)", tool)
	case len(match) > 1:
		var ids []string
		for _, d := range match {
			ids = append(ids, d.DescriptorID)
		}
		return wire.Call{}, fmt.Errorf("tool %q is declared by %s; choose one with --descriptor", tool, strings.Join(ids, ", "))
	}
	bounds, _ := json.Marshal(match[0].Bounds)
	c := wire.Call{V: wire.Version, CallID: newCallID(), Tool: tool, DescriptorID: match[0].DescriptorID, Args: args, BoundsEcho: bounds}
	return c, c.Validate()
}

// newCallID is a fresh id for a CLI call.
func newCallID() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return "cli_" + hex.EncodeToString(b[:])
}
