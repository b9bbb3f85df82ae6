// Package localclient is a Go client of Airlock's local browser broker, for
// both roles: an extension-side host (Mint, DialHost) and a browser-like
// view (Bootstrap, DialView). It speaks the wire contract of PROTOCOL
// sections 2–4 and nothing more; the broker's tests and `airlock mint` use
// it.
package localclient

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"

	"github.com/airlock/airlock/broker/contract"
)

// Client talks HTTP to one broker.
type Client struct {
	// Base is the broker's URL, for example http://127.0.0.1:7420.
	Base string
	// Token is the launch token (needed by Mint only).
	Token string
	// HTTP is the client to use; nil means http.DefaultClient.
	HTTP *http.Client
}

// MintOptions are the body of POST /local/sessions.
type MintOptions struct {
	LaunchOrigin string
	// TTLSeconds is sent when not zero (the broker clamps it).
	TTLSeconds            int64
	CanProposeSourceEdits bool
}

// SessionInfo is a session as bootstrap returns it.
type SessionInfo struct {
	WorkspaceSessionID string                `json:"workspaceSessionId"`
	LaunchOrigin       string                `json:"launchOrigin"`
	ExpiresAt          string                `json:"expiresAt"`
	ProtocolVersion    int                   `json:"protocolVersion"`
	Capabilities       contract.Capabilities `json:"capabilities"`
}

// Minted is the mint response: the session and its two secrets.
type Minted struct {
	SessionInfo
	ViewCredential string `json:"viewCredential"`
	HostCookieKey  string `json:"hostCookieKey"`
}

// ViewFragment is the URL fragment the built-in view page reads:
// "<workspaceSessionId>.<viewCredential>".
func (m *Minted) ViewFragment() string { return m.WorkspaceSessionID + "." + m.ViewCredential }

// ViewURL is the built-in view page's URL for this session on base.
func (m *Minted) ViewURL(base string) string {
	return strings.TrimSuffix(base, "/") + "/local/view#" + m.ViewFragment()
}

// Mint creates a session (POST /local/sessions with the launch token).
func (c *Client) Mint(ctx context.Context, o MintOptions) (*Minted, error) {
	body := map[string]any{"launchOrigin": o.LaunchOrigin}
	if o.TTLSeconds != 0 {
		body["ttlSeconds"] = o.TTLSeconds
	}
	if o.CanProposeSourceEdits {
		body["canProposeSourceEdits"] = true
	}
	var out Minted
	_, err := c.post(ctx, "/local/sessions", map[string]string{contract.TokenHeader: c.Token}, body, http.StatusCreated, &out)
	if err != nil {
		return nil, fmt.Errorf("localclient: mint: %w", err)
	}
	return &out, nil
}

// End ends a session before its expiresAt (DELETE /local/sessions/{id},
// PROTOCOL section 2.1): its sockets close 4402 and it answers 410 from
// then on. Ending one already ended is no error.
func (c *Client) End(ctx context.Context, sessionID string) error {
	_, err := c.send(ctx, http.MethodDelete, "/local/sessions/"+url.PathEscape(sessionID),
		map[string]string{contract.TokenHeader: c.Token}, nil, http.StatusNoContent, nil)
	if err != nil {
		return fmt.Errorf("localclient: end: %w", err)
	}
	return nil
}

// ViewPass is what bootstrap hands a view: the cookie the broker set and
// the view key it returned (PROTOCOL section 3). DialView offers both.
type ViewPass struct {
	Cookie *http.Cookie
	Key    string
}

// Bootstrap trades a view credential for the view cookie and the view
// key, as the view page does: same-origin POST with Origin set to the
// launch origin. It returns them and the session info.
func (c *Client) Bootstrap(ctx context.Context, origin, sessionID, credential string) (*ViewPass, *SessionInfo, error) {
	var out struct {
		SessionInfo
		ViewKey string `json:"viewKey"`
	}
	body := map[string]string{"workspaceSessionId": sessionID, "viewCredential": credential}
	resp, err := c.post(ctx, "/local/bootstrap", map[string]string{"Origin": origin}, body, http.StatusOK, &out)
	if err != nil {
		return nil, nil, fmt.Errorf("localclient: bootstrap: %w", err)
	}
	for _, ck := range resp.Cookies() {
		if strings.HasPrefix(ck.Name, contract.ViewCookiePrefix) {
			return &ViewPass{Cookie: ck, Key: out.ViewKey}, &out.SessionInfo, nil
		}
	}
	return nil, nil, fmt.Errorf("localclient: bootstrap: %w", ErrNoCookie)
}

// post sends a JSON body and decodes a response of status want into out;
// any other status is an *HTTPError.
func (c *Client) post(ctx context.Context, path string, header map[string]string, body any, want int, out any) (*http.Response, error) {
	return c.send(ctx, http.MethodPost, path, header, body, want, out)
}

// send is one request: body, when not nil, goes as JSON; out, when not
// nil, receives the JSON answer of status want.
func (c *Client) send(ctx context.Context, method, path string, header map[string]string, body any, want int, out any) (*http.Response, error) {
	var reader io.Reader
	if body != nil {
		data, err := json.Marshal(body)
		if err != nil {
			return nil, err
		}
		reader = bytes.NewReader(data)
	}
	req, err := http.NewRequestWithContext(ctx, method, strings.TrimSuffix(c.Base, "/")+path, reader)
	if err != nil {
		return nil, err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	for k, v := range header {
		req.Header.Set(k, v)
	}
	hc := c.HTTP
	if hc == nil {
		hc = http.DefaultClient
	}
	resp, err := hc.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != want {
		var e struct {
			Error struct {
				Code contract.Code `json:"code"`
			} `json:"error"`
		}
		_ = json.Unmarshal(raw, &e)
		return nil, &HTTPError{Status: resp.StatusCode, Code: e.Error.Code}
	}
	if out == nil {
		return resp, nil
	}
	if err := json.Unmarshal(raw, out); err != nil {
		return nil, err
	}
	return resp, nil
}
