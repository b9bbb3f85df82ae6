// Package mcptest is the MCP client side of the tests of broker/mcp and of
// `airlock mcp` and /mcp end to end: the Go SDK's client, recording the
// notifications it receives.
package mcptest

import (
	"context"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// Notifications a Client records.
const (
	ListChanged = "list_changed"
	Progress    = "progress"
)

// Client is a session with an MCP server and what it was notified of.
type Client struct {
	*sdk.ClientSession
	notes chan string
}

// Revision is the MCP revision Connect speaks: the newest with sessions,
// which the tests of sessions (cancellation, the GET stream) rely on.
const Revision = "2025-11-25"

// Stateless is the revision without sessions (server/discover, the
// revision in each request's _meta).
const Stateless = "2026-07-28"

// Connect connects the SDK's client over t at Revision.
func Connect(ctx context.Context, t sdk.Transport) (*Client, error) {
	return ConnectAt(ctx, t, Revision)
}

// ConnectAt connects the SDK's client over t at revision: initialize for
// a revision with sessions, server/discover for Stateless.
func ConnectAt(ctx context.Context, t sdk.Transport, revision string) (*Client, error) {
	c := &Client{notes: make(chan string, 64)}
	note := func(what string) {
		select {
		case c.notes <- what:
		default: // a test waits for one, not for all
		}
	}
	client := sdk.NewClient(&sdk.Implementation{Name: "mcptest"}, &sdk.ClientOptions{
		ToolListChangedHandler:      func(context.Context, *sdk.ToolListChangedRequest) { note(ListChanged) },
		ProgressNotificationHandler: func(context.Context, *sdk.ProgressNotificationClientRequest) { note(Progress) },
	})
	cs, err := client.Connect(ctx, t, &sdk.ClientSessionOptions{ProtocolVersion: revision})
	if err != nil {
		return nil, err
	}
	c.ClientSession = cs
	return c, nil
}

// List is tools/list by name.
func (c *Client) List(t testing.TB) map[string]*sdk.Tool {
	t.Helper()
	res, err := c.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]*sdk.Tool{}
	for _, tool := range res.Tools {
		out[tool.Name] = tool
	}
	return out
}

// Call is tools/call; a JSON-RPC error fails the test.
func (c *Client) Call(t testing.TB, name string, args any) *sdk.CallToolResult {
	t.Helper()
	res, err := c.CallTool(context.Background(), &sdk.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("tools/call %s: %v", name, err)
	}
	return res
}

// Wait waits up to a minute for a notification (ListChanged, Progress).
func (c *Client) Wait(t testing.TB, what string) {
	t.Helper()
	deadline := time.After(time.Minute)
	for {
		select {
		case got := <-c.notes:
			if got == what {
				return
			}
		case <-deadline:
			t.Fatalf("no %s notification", what)
		}
	}
}

// Forget drops the notifications received so far.
func (c *Client) Forget() {
	for {
		select {
		case <-c.notes:
		default:
			return
		}
	}
}

// Text is the one text content of a result, or "".
func Text(res *sdk.CallToolResult) string {
	if len(res.Content) != 1 {
		return ""
	}
	if tc, ok := res.Content[0].(*sdk.TextContent); ok {
		return tc.Text
	}
	return ""
}
