package relay

import (
	"github.com/airlock/airlock/broker/contract"
	"github.com/airlock/airlock/metrics"
)

// Directions, the closed label set of airlock_relay_messages_total.
const (
	dirHostToViews = metrics.RelayHostToViews
	dirViewToHost  = metrics.RelayViewToHost
	dirHostToView  = metrics.RelayHostToView
	dirBroker      = metrics.RelayBroker
)

// Handle routes one validated message from m. A refusal is answered to m
// as a typed error and returned (for metrics). ErrGone means m was dropped
// or has left: the caller's relay loop must stop, since a dead connection
// relays nothing more.
func (h *Hub) Handle(m *Member, msg *contract.Message) (*contract.Refusal, error) {
	h.mu.Lock()
	defer h.unlock()
	if m.dead || h.closed {
		return nil, ErrGone
	}
	r := h.route(m, msg)
	if r != nil {
		if r.RequestID == "" {
			r.RequestID = msg.RequestID
		}
		h.offer(m, ErrorFrame(h.opts.SessionID, r))
	}
	return r, nil
}

// Refuse answers m with a typed error for a frame the contract refused.
// Like Handle it returns ErrGone for a member that is no longer registered.
func (h *Hub) Refuse(m *Member, r *contract.Refusal) error {
	h.mu.Lock()
	defer h.unlock()
	if m.dead || h.closed {
		return ErrGone
	}
	h.offer(m, ErrorFrame(h.opts.SessionID, r))
	return nil
}

func (h *Hub) route(m *Member, msg *contract.Message) *contract.Refusal {
	spec := msg.Spec
	switch {
	case spec.Kind != contract.NotRequest && m.role == contract.View:
		return h.fromViewRequest(m, msg)
	case spec.Kind != contract.NotRequest:
		return h.fromHostReply(msg)
	case msg.Type == "snapshotRequest":
		return h.ask(m, msg)
	case msg.Type == "snapshot":
		return h.answer(msg)
	case m.role == contract.Host:
		return h.fromHostState(msg)
	}
	return h.toHost(msg)
}

// fromHostState broadcasts host state, ack and error to every view,
// enforcing strictly increasing hostSequence on ordered state.
func (h *Hub) fromHostState(msg *contract.Message) *contract.Refusal {
	if msg.Spec.Ordered {
		if msg.HostSequence <= h.lastSeq {
			return refuse(contract.DetailSequence)
		}
		h.lastSeq = msg.HostSequence
	}
	h.count(msg.Type, dirHostToViews)
	for _, v := range h.fanout {
		h.offer(v, msg.Raw)
	}
	return nil
}

// toHost forwards view traffic (revealNode, ack, error) to the host only.
func (h *Hub) toHost(msg *contract.Message) *contract.Refusal {
	if h.host == nil {
		return refuse(contract.DetailNoHost)
	}
	if !h.forwardShare(h.host, msg.Raw, msg.Type) {
		return refuse(contract.DetailBusy)
	}
	return nil
}

func refuse(detail string) *contract.Refusal {
	return &contract.Refusal{Code: contract.InvalidMessage, Detail: detail}
}

// send encodes and queues a broker-owned message for m.
func (h *Hub) send(m *Member, typ string, payload any) {
	if m == nil || m.dead {
		return
	}
	h.count(typ, dirBroker)
	h.offer(m, Frame(h.opts.SessionID, typ, payload))
}

// notifyHost encodes and queues for the host a notice a view caused (the
// viewState and cancels of a view that left) within the host queue's byte
// bound only (Outbox.OfferNotice). One that does not fit is not sent,
// logged and counted; the host stays (the view that caused it is gone).
func (h *Hub) notifyHost(typ string, payload any) {
	if h.host == nil || h.host.dead {
		return
	}
	if !h.host.out.OfferNotice(Frame(h.opts.SessionID, typ, payload)) {
		h.opts.Logger.Warn("relay: notice to the host dropped: its queue is full", "type", typ)
		h.countHostBusy(metrics.HostBusyNoticeDropped)
		return
	}
	h.count(typ, dirBroker)
}

// countHostBusy counts what the hub did instead of dropping the host.
func (h *Hub) countHostBusy(outcome string) {
	h.opts.Metrics.RelayHostBusy.WithLabelValues(outcome).Inc()
}

// forward queues a client frame for one member and counts it.
func (h *Hub) forward(m *Member, raw []byte, typ, dir string) {
	if m == nil || m.dead {
		return
	}
	h.count(typ, dir)
	h.offer(m, raw)
}

// forwardShare queues view traffic for the host within the share of its
// queue open to views (Outbox.OfferShare) and counts it. False means it
// did not fit: the caller refuses the view (busy); the host stays.
func (h *Hub) forwardShare(host *Member, raw []byte, typ string) bool {
	if host.dead {
		return true // going away; like offer, nothing is refused for it
	}
	if !host.out.OfferShare(raw) {
		return false
	}
	h.count(typ, dirViewToHost)
	return true
}

// offer queues a frame; a full queue drops the member.
func (h *Hub) offer(m *Member, frame []byte) {
	if m.dead {
		return
	}
	if !m.out.Offer(frame) {
		h.drop(m)
	}
}

// count counts one relayed message on its pre-bound counter (a type or
// direction outside the contract's routes counts as OTHER).
func (h *Hub) count(typ, dir string) {
	h.opts.Metrics.RelayMessage(typ, dir).Inc()
}

// CountedPairs is every (type, direction) the hub counts, from the
// contract's table (PROTOCOL section 4.5), for the broker to declare at
// zero: a client's message in the direction its sender's role sends it, a
// host's replies and snapshots to one view, the broker's own messages and
// the cancels it writes for a view that left. hello is the handshake and
// is not relayed.
func CountedPairs() []metrics.RelayPair {
	var out []metrics.RelayPair
	for _, t := range contract.Types() {
		s, _ := contract.Lookup(t)
		switch {
		case t == "hello":
			continue
		case s.From == 0:
			out = append(out, metrics.RelayPair{Type: t, Direction: dirBroker})
			continue
		}
		if s.From&contract.View != 0 {
			out = append(out, metrics.RelayPair{Type: t, Direction: dirViewToHost})
		}
		if s.From&contract.Host != 0 {
			dir := dirHostToViews
			if t == "snapshot" || s.Kind == contract.Progress || s.Kind == contract.Result {
				dir = dirHostToView
			}
			out = append(out, metrics.RelayPair{Type: t, Direction: dir})
		}
		if s.Kind == contract.Cancel {
			out = append(out, metrics.RelayPair{Type: t, Direction: dirBroker})
		}
	}
	return out
}
