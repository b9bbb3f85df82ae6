package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/airlock/airlock/executors/wire"
	"github.com/airlock/airlock/plugins"
)

// defaultBroker is where the CLI looks for a broker when --broker is not
// given: the default listen address of `airlock serve`.
const defaultBroker = "http://127.0.0.1:7420"

// v1Client speaks the /v1 API of a running broker with the launch token.
type v1Client struct {
	base  string
	token string
	http  *http.Client
}

// newV1Client reads the token the way `serve` does (environment or token
// file) so the CLI never needs it on its command line.
func newV1Client(base, tokenFile string) (*v1Client, error) {
	token, err := launchToken(tokenFile)
	if err != nil {
		return nil, err
	}
	if token == "" {
		return nil, errors.New("set TENSORVIZ_LOCAL_TOKEN (or AIRLOCK_LOCAL_TOKEN, or --token-file) to the broker's launch token")
	}
	base = strings.TrimSuffix(base, "/")
	if !strings.HasPrefix(base, "http://") && !strings.HasPrefix(base, "https://") {
		return nil, fmt.Errorf("--broker must be an http(s) URL such as %s", defaultBroker)
	}
	return &v1Client{base: base, token: token, http: &http.Client{Timeout: 15 * time.Minute}}, nil
}

// do sends a request and decodes a 2xx JSON answer into out. A call
// refused as 400 still carries an answer envelope, so 400 is decoded too.
func (c *v1Client) do(ctx context.Context, method, path string, body []byte, out any) error {
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("X-Tensorviz-Token", c.token)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return fmt.Errorf("broker unreachable: %w", err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		return err
	}
	if resp.StatusCode/100 != 2 && resp.StatusCode != http.StatusBadRequest {
		return fmt.Errorf("broker answered %s: %s", resp.Status, strings.TrimSpace(string(data)))
	}
	if err := json.Unmarshal(data, out); err != nil {
		return fmt.Errorf("broker answered %s with unreadable JSON", resp.Status)
	}
	return nil
}

func (c *v1Client) tools(ctx context.Context) ([]wire.Descriptor, error) {
	var out struct {
		Descriptors []wire.Descriptor `json:"descriptors"`
	}
	err := c.do(ctx, http.MethodGet, "/v1/tools", nil, &out)
	return out.Descriptors, err
}

func (c *v1Client) plugins(ctx context.Context) ([]plugins.Status, error) {
	var out struct {
		Plugins []plugins.Status `json:"plugins"`
	}
	err := c.do(ctx, http.MethodGet, "/v1/plugins", nil, &out)
	return out.Plugins, err
}

// call posts one call envelope and returns the raw answer, validated.
func (c *v1Client) call(ctx context.Context, call wire.Call) (wire.Answer, json.RawMessage, error) {
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

// newCallID is a fresh id for a CLI call.
func newCallID() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return "cli_" + hex.EncodeToString(b[:])
}

// buildCall fills descriptorId and boundsEcho from the broker's catalog:
// the descriptor that declares tool, or the one named by descriptor when
// several do.
func buildCall(ds []wire.Descriptor, tool, descriptor string, args json.RawMessage) (wire.Call, error) {
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
