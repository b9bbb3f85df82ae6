package session

import (
	"bufio"
	"bytes"
	"crypto/rand"
	"encoding/base64"
	"encoding/binary"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"

	"github.com/airlock/airlock/broker/contract"
	"github.com/airlock/airlock/broker/localclient"
	"github.com/airlock/airlock/executors/testkit"
)

// TestViewHelloSentWithTheUpgrade is a view that sends its hello in the
// same write as its upgrade request, before the 101: net/http has read
// those bytes already, so the view keeps net/http's buffers (not the
// small ones, which would lose them) and is answered connected.
func TestViewHelloSentWithTheUpgrade(t *testing.T) {
	b := startBroker(t, testLocal(), nil)
	m, ck := flow(t, b)
	helloHost(t, b, m)
	addr := strings.TrimPrefix(b.URL, "http://")
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	key := make([]byte, 16)
	_, _ = rand.Read(key)
	req := "GET /local/ws HTTP/1.1\r\nHost: " + addr + "\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n" +
		"Sec-WebSocket-Version: 13\r\nSec-WebSocket-Key: " + base64.StdEncoding.EncodeToString(key) + "\r\n" +
		"Origin: " + b.Origin + "\r\nCookie: " + ck.Cookie.Name + "=" + ck.Cookie.Value + "\r\n" +
		"Sec-WebSocket-Protocol: " + strings.Join(contract.ViewSubprotocols(ck.Key), ", ") + "\r\n\r\n"
	hello := localclient.Envelope(m.WorkspaceSessionID, "hello", map[string]any{}, 0)
	if _, err := c.Write(append([]byte(req), maskedText(hello)...)); err != nil {
		t.Fatal(err)
	}
	r := bufio.NewReader(c)
	resp, err := http.ReadResponse(r, nil)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusSwitchingProtocols {
		t.Fatalf("upgrade answered %s", resp.Status)
	}
	got := readServerFrame(t, r)
	if !bytes.Contains(got, []byte(`"type":"connected"`)) {
		t.Fatalf("first frame %s, want connected", got)
	}
}

// helloHost connects the session's host, hello answered; the test's
// cleanup closes it.
func helloHost(t *testing.T, b *testBroker, m *localclient.Minted) *localclient.Conn {
	t.Helper()
	host, err := localclient.DialHost(ctxT(t), b.URL, m)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = host.Close() })
	if _, err := host.Hello(ctxT(t)); err != nil {
		t.Fatal(err)
	}
	return host
}

// maskedText is one client text frame (masked, as RFC 6455 requires).
func maskedText(p []byte) []byte {
	f := []byte{0x81}
	switch {
	case len(p) < 126:
		f = append(f, 0x80|byte(len(p)))
	default:
		f = append(f, 0x80|126)
		f = binary.BigEndian.AppendUint16(f, uint16(len(p)))
	}
	mask := []byte{1, 2, 3, 4}
	f = append(f, mask...)
	for i, c := range p {
		f = append(f, c^mask[i%4])
	}
	return f
}

// readServerFrame reads one unmasked, unfragmented server frame's payload.
func readServerFrame(t *testing.T, r *bufio.Reader) []byte {
	t.Helper()
	var h [2]byte
	if _, err := io.ReadFull(r, h[:]); err != nil {
		t.Fatal(err)
	}
	n := int(h[1] & 0x7f)
	switch n {
	case 126:
		var l [2]byte
		if _, err := io.ReadFull(r, l[:]); err != nil {
			t.Fatal(err)
		}
		n = int(binary.BigEndian.Uint16(l[:]))
	case 127:
		t.Fatal("frame too large for this test")
	}
	p := make([]byte, n)
	if _, err := io.ReadFull(r, p); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestIdleViewHasNoWriter: once a view has received what its arrival
// caused, its socket's writer has exited; a frame to the view starts
// one again, and it still arrives whole, larger than the view's buffers.
func TestIdleViewHasNoWriter(t *testing.T) {
	b := startBroker(t, testLocal(), nil)
	m, ck := flow(t, b)
	ctx := ctxT(t)
	host := helloHost(t, b, m)
	v, err := localclient.DialView(ctx, b.URL, b.Origin, m.WorkspaceSessionID, ck)
	if err != nil {
		t.Fatal(err)
	}
	defer v.Close()
	if _, err := v.Hello(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := v.Receive(ctx); err != nil { // connectionState
		t.Fatal(err)
	}
	if _, err := host.Receive(ctx); err != nil { // viewState
		t.Fatal(err)
	}
	writers := func() int {
		b.mu.Lock()
		defer b.mu.Unlock()
		n := 0
		for k := range b.sockets {
			k.mu.Lock()
			if k.running {
				n++
			}
			k.mu.Unlock()
		}
		return n
	}
	testkit.Eventually(t, "no socket has a writer while idle", func() bool { return writers() == 0 })
	pad := strings.Repeat("x", 3*viewWriteBuffer)
	for seq := int64(1); seq <= 3; seq++ {
		if err := host.Send(ctx, "focusNode", map[string]any{"nodeId": "n", "pad": pad}, seq); err != nil {
			t.Fatal(err)
		}
	}
	for seq := int64(1); seq <= 3; seq++ {
		got, err := v.Receive(ctx)
		if err != nil {
			t.Fatal(err)
		}
		var p struct{ Pad string }
		if got.Type != "focusNode" || got.HostSequence != seq || got.Decode(&p) != nil || p.Pad != pad {
			t.Fatalf("got %s #%d, want focusNode #%d with the whole pad", got.Type, got.HostSequence, seq)
		}
	}
	testkit.Eventually(t, "the writer exits again", func() bool { return writers() == 0 })
}
