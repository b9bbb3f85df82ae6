package localclient

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strings"
	"sync"

	"github.com/coder/websocket"

	"github.com/airlock/airlock/broker/contract"
)

// DialOptions are the transport facts of an upgrade; tests use them to
// play hostile pages.
type DialOptions struct {
	// Origin is sent as the Origin header unless empty.
	Origin string
	// Cookies are sent in one Cookie header.
	Cookies []*http.Cookie
	// ViewKey, unless empty, is offered as a view offers it: in
	// Sec-WebSocket-Protocol beside the view protocol.
	ViewKey string
	// Host overrides the Host header (DNS-rebinding tests).
	Host string
	// SessionID is the workspaceSessionId Send puts in envelopes.
	SessionID string
	// Inbox bounds the received messages buffered before the reader
	// waits; 0 means 1024.
	Inbox int
	// Header is sent besides the above (a load floor's secret).
	Header http.Header
}

// Conn is one /local/ws connection. A reader goroutine receives every
// message into a buffer, so Receive can give up on its context without
// harming the connection.
type Conn struct {
	ws        *websocket.Conn
	sessionID string
	in        chan *Message
	done      chan struct{}
	quit      chan struct{} // closed by Close: the reader stops delivering
	quitOnce  sync.Once
	mu        sync.Mutex
	err       error // why the reader stopped
}

// Message is one received frame.
type Message struct {
	Type         string          `json:"type"`
	Payload      json.RawMessage `json:"payload"`
	HostSequence int64           `json:"hostSequence,omitempty"`
	// Raw is the frame as received.
	Raw []byte `json:"-"`
}

// Error decodes a broker error message; nil for other types.
func (m *Message) Error() *ProtocolError {
	if m.Type != "error" {
		return nil
	}
	var p ProtocolError
	var raw struct {
		Code      contract.Code `json:"code"`
		Detail    string        `json:"detail"`
		RequestID string        `json:"requestId"`
	}
	_ = json.Unmarshal(m.Payload, &raw)
	p.Code, p.Detail, p.RequestID = raw.Code, raw.Detail, raw.RequestID
	return &p
}

// Decode unmarshals the payload into v.
func (m *Message) Decode(v any) error { return json.Unmarshal(m.Payload, v) }

// WSURL turns an http(s) base URL into the /local/ws URL.
func WSURL(base string) string {
	base = strings.TrimSuffix(base, "/")
	if rest, ok := strings.CutPrefix(base, "https://"); ok {
		return "wss://" + rest + "/local/ws"
	}
	return "ws://" + strings.TrimPrefix(base, "http://") + "/local/ws"
}

// Dial opens /local/ws with exactly the given transport facts. The broker
// accepts every upgrade and refuses by close code, so a refused dial
// succeeds here and its first Receive reports the close (see CloseStatus).
func Dial(ctx context.Context, base string, o DialOptions) (*Conn, error) {
	h := o.Header.Clone()
	if h == nil {
		h = http.Header{}
	}
	if o.Origin != "" {
		h.Set("Origin", o.Origin)
	}
	if len(o.Cookies) > 0 {
		parts := make([]string, 0, len(o.Cookies))
		for _, c := range o.Cookies {
			parts = append(parts, c.Name+"="+c.Value)
		}
		h.Set("Cookie", strings.Join(parts, "; "))
	}
	var protocols []string
	if o.ViewKey != "" {
		protocols = contract.ViewSubprotocols(o.ViewKey)
	}
	ws, _, err := websocket.Dial(ctx, WSURL(base), &websocket.DialOptions{HTTPHeader: h, Host: o.Host, Subprotocols: protocols})
	if err != nil {
		return nil, fmt.Errorf("localclient: dial: %w", err)
	}
	ws.SetReadLimit(64 << 20)
	n := o.Inbox
	if n <= 0 {
		n = 1024
	}
	c := &Conn{ws: ws, sessionID: o.SessionID, in: make(chan *Message, n), done: make(chan struct{}), quit: make(chan struct{})}
	go c.readLoop()
	return c, nil
}

// DialHost connects as the session's host: the fixed cookie name with the
// host cookie key, and Origin set to the launch origin.
func DialHost(ctx context.Context, base string, m *Minted) (*Conn, error) {
	return Dial(ctx, base, DialOptions{Origin: m.LaunchOrigin, SessionID: m.WorkspaceSessionID,
		Cookies: []*http.Cookie{{Name: contract.HostCookie, Value: m.HostCookieKey}}})
}

// DialView connects as a view with the cookie and view key Bootstrap
// returned.
func DialView(ctx context.Context, base, origin, sessionID string, pass *ViewPass) (*Conn, error) {
	return Dial(ctx, base, DialOptions{Origin: origin, SessionID: sessionID, Cookies: []*http.Cookie{pass.Cookie}, ViewKey: pass.Key})
}

func (c *Conn) readLoop() {
	defer close(c.done)
	defer close(c.in)
	for {
		_, data, err := c.ws.Read(context.Background())
		if err != nil {
			c.mu.Lock()
			c.err = err
			c.mu.Unlock()
			return
		}
		var m Message
		if json.Unmarshal(data, &m) != nil {
			m = Message{Type: ""}
		}
		m.Raw = data
		select {
		case c.in <- &m:
		case <-c.quit:
			return
		}
	}
}

// Receive returns the next message, or ErrClosed (wrapping the close
// error) once the connection has closed and every buffered message was
// read. A done ctx returns ctx's error and leaves the connection alone.
func (c *Conn) Receive(ctx context.Context) (*Message, error) {
	select {
	case m, ok := <-c.in:
		if !ok {
			return nil, fmt.Errorf("%w: %w", ErrClosed, c.readErr())
		}
		return m, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

func (c *Conn) readErr() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.err
}

// Envelope encodes a message of the contract for this connection's
// session; seq 0 leaves hostSequence out.
func (c *Conn) Envelope(typ string, payload any, seq int64) []byte {
	return Envelope(c.sessionID, typ, payload, seq)
}

// Envelope encodes a message for sessionID.
func Envelope(sessionID, typ string, payload any, seq int64) []byte {
	env := map[string]any{"protocolVersion": contract.ProtocolVersion, "workspaceSessionId": sessionID, "type": typ, "payload": payload}
	if seq != 0 {
		env["hostSequence"] = seq
	}
	b, _ := json.Marshal(env)
	return b
}

// Send sends one message of the contract.
func (c *Conn) Send(ctx context.Context, typ string, payload any, seq int64) error {
	return c.SendRaw(ctx, c.Envelope(typ, payload, seq))
}

// SendRaw sends a text frame as is.
func (c *Conn) SendRaw(ctx context.Context, frame []byte) error {
	return c.ws.Write(ctx, websocket.MessageText, frame)
}

// SendBinary sends a binary frame (which the broker refuses).
func (c *Conn) SendBinary(ctx context.Context, frame []byte) error {
	return c.ws.Write(ctx, websocket.MessageBinary, frame)
}

// Connected is the broker's answer to hello.
type Connected struct {
	Role          string   `json:"role"`
	HostEpoch     int      `json:"hostEpoch"`
	Views         []string `json:"views"`
	ViewID        string   `json:"viewId"`
	HostConnected bool     `json:"hostConnected"`
	// Capabilities are the session's, as mint and bootstrap state them.
	Capabilities contract.Capabilities `json:"capabilities"`
}

// Hello performs the handshake: it sends hello and waits for connected. A
// broker error arrives as *ProtocolError; a close as ErrClosed.
func (c *Conn) Hello(ctx context.Context) (*Connected, error) {
	if err := c.Send(ctx, "hello", map[string]any{}, 0); err != nil {
		return nil, fmt.Errorf("localclient: hello: %w", err)
	}
	m, err := c.Receive(ctx)
	if err != nil {
		return nil, fmt.Errorf("localclient: hello: %w", err)
	}
	if pe := m.Error(); pe != nil {
		return nil, fmt.Errorf("localclient: hello: %w", pe)
	}
	if m.Type != "connected" {
		return nil, fmt.Errorf("localclient: hello: %w (%s)", ErrUnexpected, m.Type)
	}
	var out Connected
	if err := m.Decode(&out); err != nil {
		return nil, fmt.Errorf("localclient: hello: %w", err)
	}
	return &out, nil
}

// Close closes the connection normally and waits for the reader.
func (c *Conn) Close() error {
	c.quitOnce.Do(func() { close(c.quit) })
	err := c.ws.Close(websocket.StatusNormalClosure, "")
	<-c.done
	if err != nil && (errors.Is(err, net.ErrClosed) || websocket.CloseStatus(err) != -1) {
		err = nil
	}
	return err
}

// CloseNow drops the connection without a close handshake, as a crashed
// peer would.
func (c *Conn) CloseNow() {
	c.quitOnce.Do(func() { close(c.quit) })
	_ = c.ws.CloseNow()
	<-c.done
}

// Done is closed when the connection has closed.
func (c *Conn) Done() <-chan struct{} { return c.done }

// CloseStatus reports the close code and reason the broker sent, from an
// error returned by Receive or Hello; code -1 when the error is not a
// close.
func CloseStatus(err error) (contract.CloseCode, string) {
	var ce websocket.CloseError
	if errors.As(err, &ce) {
		return contract.CloseCode(ce.Code), ce.Reason
	}
	return -1, ""
}
