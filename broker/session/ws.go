package session

import (
	"errors"
	"net/http"
	"time"

	"github.com/coder/websocket"

	"github.com/airlock/airlock/broker/contract"
	"github.com/airlock/airlock/broker/internal/connlimit"
	"github.com/airlock/airlock/broker/internal/httpx"
	"github.com/airlock/airlock/broker/relay"
)

// requestOrigin is the Origin that bootstrap and /local/ws compare with
// the launch origin: the request's only Origin header, or "" (which
// matches no launch origin: 403, close 4403) when it has none or several.
func requestOrigin(r *http.Request) string {
	origin, _ := httpx.OneOrigin(r)
	return origin
}

// serveWS is GET /local/ws: transport checks and upgrade here, then
// handshake and relay on a goroutine of the socket's own. The handler
// returns once the connection is upgraded, so net/http drops what it
// keeps per request while its handler runs (the request and its headers,
// the response, its 4 KiB read and write buffers, a deep stack) instead
// of holding it for the socket's life (RATIONALE.md, "Why does a
// /local/ws socket outlive its HTTP handler?").
func (s *Service) serveWS(w http.ResponseWriter, r *http.Request) {
	sess, role, authErr := s.admit(r, requestOrigin(r), false)
	if role != contract.Host {
		w = smallBuffers{w} // views, and sockets refused below
	}
	// Origin was checked above, exactly; the library's own check is a
	// host pattern match and must not decide. A view that offered its key
	// is answered the view protocol, never the key (a browser fails a
	// socket whose offered subprotocols get no answer).
	conn, err := websocket.Accept(w, r, &websocket.AcceptOptions{InsecureSkipVerify: true,
		Subprotocols: []string{contract.ViewProtocol}})
	if err != nil {
		return // not a WebSocket upgrade; Accept answered it
	}
	conn.SetReadLimit(-1) // frames are bounded by frame.Read, which survives oversize ones
	k := newSocket(conn, s.opts.Local.OutboundQueue, s.opts.Local.OutboundQueueBytes)
	if !s.track(k) {
		_ = conn.Close(websocket.StatusGoingAway, contract.ReasonGoingAway)
		return
	}
	if authErr != nil {
		defer s.untrack(k)
		c := codeOf(authErr)
		s.authRefused("ws", c)
		_ = conn.Close(websocket.StatusCode(c.CloseCode()), string(c))
		return
	}
	ctx := r.Context() // only its values are used: the connection's cap entry
	go s.serveSocket(sess, role, k, func() { connlimit.Established(ctx) })
}

// serveSocket is an authenticated socket's life: handshake, relay,
// close. established marks it so for the connection cap.
func (s *Service) serveSocket(sess *Session, role contract.Role, k *socket, established func()) {
	defer s.untrack(k)
	s.connGauge(role, 1)
	defer s.connGauge(role, -1)
	// Past a valid hello the cap never closes the socket to make room; it
	// is marked so before connected is sent, or a client could act on
	// connected while its socket could still be evicted.
	member := s.handshake(sess, role, k, established)
	if member != nil {
		s.relay(sess, member, k)
		sess.hub.Leave(member)
	}
	k.Close(contract.CloseNormal, "")
	<-k.done
}

// handshake waits (bounded) for hello and registers the socket in the
// session's hub. A failure is answered with the typed error, then the
// paired close code; it returns nil then.
func (s *Service) handshake(sess *Session, role contract.Role, k *socket, established func()) *relay.Member {
	timeout := time.Duration(s.opts.Local.HandshakeTimeoutMs) * time.Millisecond
	t := s.clock.AfterFunc(timeout, func() {
		s.refuseHandshake(sess, k, &contract.Refusal{Code: contract.InvalidMessage, Detail: contract.DetailHandshakeTimeout})
	})
	f, err := k.readFrame(s.opts.Local.MaxFrameBytes)
	stopped := t.Stop()
	if err != nil || !stopped {
		return nil
	}
	_, ref := contract.Validate(f, contract.Context{Role: role, SessionID: sess.ID, Handshake: true})
	if ref != nil {
		s.refuseHandshake(sess, k, ref)
		return nil
	}
	established()
	m, ref, err := sess.hub.Join(role, k)
	switch {
	case ref != nil:
		s.refuseHandshake(sess, k, ref)
	case errors.Is(err, relay.ErrTooManyViews):
		k.Close(contract.CloseTryAgainLater, contract.ReasonTooManyViews)
	case errors.Is(err, relay.ErrHostBusy):
		k.Close(contract.CloseTryAgainLater, contract.ReasonHostBusy)
	case err != nil && s.isClosed():
		k.Close(contract.CloseGoingAway, contract.ReasonGoingAway)
	case err != nil:
		k.Close(contract.CredentialExpired.CloseCode(), string(contract.CredentialExpired))
	}
	return m
}

func (s *Service) refuseHandshake(sess *Session, k *socket, ref *contract.Refusal) {
	s.relayRefused(ref)
	k.refuse(relay.ErrorFrame(sess.ID, ref), ref.Code.CloseCode(), string(ref.Code))
}

// relay is the connection's read loop: each frame is validated once and
// handed to the hub. It ends when the socket closes or the hub has
// dropped the member (a dead connection relays nothing more).
func (s *Service) relay(sess *Session, m *relay.Member, k *socket) {
	ctx := contract.Context{Role: m.Role(), SessionID: sess.ID, ViewID: m.ViewID(),
		CanPropose: sess.Caps.CanProposeSourceEdits}
	for {
		f, err := k.readFrame(s.opts.Local.MaxFrameBytes)
		if err != nil {
			return
		}
		msg, ref := contract.Validate(f, ctx)
		if ref == nil {
			ref, err = sess.hub.Handle(m, msg)
		} else {
			err = sess.hub.Refuse(m, ref)
		}
		if ref != nil {
			s.relayRefused(ref)
		}
		if err != nil {
			return
		}
	}
}

func (s *Service) relayRefused(ref *contract.Refusal) {
	s.m.RelayRefused(string(ref.Code))
}

func (s *Service) connGauge(role contract.Role, d float64) {
	s.m.WSConnections.WithLabelValues("ws", role.String()).Add(d)
}

// track registers a socket so Close can reach it; false once closed.
func (s *Service) track(k *socket) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return false
	}
	s.sockets[k] = struct{}{}
	s.conns.Add(1)
	return true
}

func (s *Service) untrack(k *socket) {
	s.mu.Lock()
	delete(s.sockets, k)
	s.mu.Unlock()
	s.conns.Done()
}

func (s *Service) isClosed() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.closed
}
