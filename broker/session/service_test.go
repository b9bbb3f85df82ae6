package session

import (
	"context"
	"errors"
	"net/http"
	"testing"
	"time"

	"github.com/airlock/airlock/broker/contract"
	"github.com/airlock/airlock/broker/localclient"
)

func ctxT(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// flow mints a session for the broker's own origin, bootstraps a view
// cookie and key and returns the pieces.
func flow(t testing.TB, b *testBroker) (*localclient.Minted, *localclient.ViewPass) {
	t.Helper()
	c := &localclient.Client{Base: b.URL, Token: testToken}
	m, err := c.Mint(ctxT(t), localclient.MintOptions{LaunchOrigin: b.Origin})
	if err != nil {
		t.Fatal(err)
	}
	ck, _, err := c.Bootstrap(ctxT(t), b.Origin, m.WorkspaceSessionID, m.ViewCredential)
	if err != nil {
		t.Fatal(err)
	}
	return m, ck
}

func TestServiceRelaySmoke(t *testing.T) {
	b := startBroker(t, testLocal(), nil)
	m, ck := flow(t, b)
	ctx := ctxT(t)
	host, err := localclient.DialHost(ctx, b.URL, m)
	if err != nil {
		t.Fatal(err)
	}
	defer host.Close()
	if c, err := host.Hello(ctx); err != nil || c.Role != "host" || c.HostEpoch != 1 {
		t.Fatalf("host hello %+v %v", c, err)
	}
	view, err := localclient.DialView(ctx, b.URL, b.Origin, m.WorkspaceSessionID, ck)
	if err != nil {
		t.Fatal(err)
	}
	defer view.Close()
	c, err := view.Hello(ctx)
	if err != nil || c.Role != "view" || !c.HostConnected {
		t.Fatalf("view hello %+v %v", c, err)
	}
	if msg, _ := view.Receive(ctx); msg.Type != "connectionState" {
		t.Fatalf("view got %s", msg.Type)
	}
	if msg, _ := host.Receive(ctx); msg.Type != "viewState" {
		t.Fatalf("host got %s", msg.Type)
	}
	if err := host.Send(ctx, "focusNode", map[string]any{"nodeId": "n1"}, 1); err != nil {
		t.Fatal(err)
	}
	msg, err := view.Receive(ctx)
	if err != nil || msg.Type != "focusNode" || msg.HostSequence != 1 {
		t.Fatalf("view got %+v %v", msg, err)
	}
	if err := host.SendBinary(ctx, []byte{1, 2, 3}); err != nil {
		t.Fatal(err)
	}
	msg, _ = host.Receive(ctx)
	if pe := msg.Error(); pe == nil || pe.Detail != "binary-frame" {
		t.Fatalf("binary: %+v", msg)
	}
	if st := b.Stats(); st.Hosts != 1 || st.Views != 1 || st.Live != 1 {
		t.Fatalf("stats %+v", st)
	}
}

func TestServiceTransportRefusal(t *testing.T) {
	b := startBroker(t, testLocal(), nil)
	m, _ := flow(t, b)
	ctx := ctxT(t)
	conn, err := localclient.Dial(ctx, b.URL, localclient.DialOptions{Origin: "http://evil.example",
		Cookies: []*http.Cookie{{Name: contract.HostCookie, Value: m.HostCookieKey}}})
	if err != nil {
		t.Fatal(err)
	}
	_, err = conn.Receive(ctx)
	if code, reason := localclient.CloseStatus(err); code != 4403 || reason != "INVALID_ORIGIN" || !errors.Is(err, localclient.ErrClosed) {
		t.Fatalf("close %d %q (%v)", code, reason, err)
	}
	conn.Close()
}

func TestServiceDrainStopsMinting(t *testing.T) {
	b := startBroker(t, testLocal(), nil)
	m, ck := flow(t, b)
	b.Drain()
	_, err := (&localclient.Client{Base: b.URL, Token: testToken}).Mint(ctxT(t), localclient.MintOptions{LaunchOrigin: b.Origin})
	var he *localclient.HTTPError
	if !errors.As(err, &he) || he.Status != 503 || he.Code != "UNAVAILABLE" {
		t.Fatalf("mint while draining: %v", err)
	}
	// Existing sessions go on until Close.
	view, err := localclient.DialView(ctxT(t), b.URL, b.Origin, m.WorkspaceSessionID, ck)
	if err != nil {
		t.Fatal(err)
	}
	defer view.Close()
	if _, err := view.Hello(ctxT(t)); err != nil {
		t.Fatalf("view while draining: %v", err)
	}
}

func TestServiceCloseGoesAway(t *testing.T) {
	b := startBroker(t, testLocal(), nil)
	m, ck := flow(t, b)
	ctx := ctxT(t)
	host, _ := localclient.DialHost(ctx, b.URL, m)
	defer host.Close()
	if _, err := host.Hello(ctx); err != nil {
		t.Fatal(err)
	}
	view, _ := localclient.DialView(ctx, b.URL, b.Origin, m.WorkspaceSessionID, ck)
	defer view.Close()
	if _, err := view.Hello(ctx); err != nil {
		t.Fatal(err)
	}
	silent, _ := localclient.DialView(ctx, b.URL, b.Origin, m.WorkspaceSessionID, ck) // still in its handshake
	defer silent.Close()
	if err := b.Service.Close(ctx); err != nil {
		t.Fatal(err)
	}
	for name, c := range map[string]*localclient.Conn{"host": host, "view": view, "handshaking": silent} {
		var err error
		for err == nil {
			_, err = c.Receive(ctx)
		}
		if code, reason := localclient.CloseStatus(err); code != 1001 || reason != "going away" {
			t.Errorf("%s closed %d %q (%v)", name, code, reason, err)
		}
	}
	if st := b.Stats(); st.Sockets != 0 {
		t.Fatalf("sockets left after Close: %+v", st)
	}
}
