package relay

import (
	"slices"

	"github.com/airlock/airlock/broker/contract"
)

// ask records a view's snapshotRequest, replacing an older one from the
// same view, and forwards it to the host when there is one. Without a
// host the ask waits and is forwarded when a host registers.
//
// An ask that does not fit the host's queue (view traffic may use only a
// share of it) is refused busy, and the view's older ask, already with
// the host, stands.
func (h *Hub) ask(m *Member, msg *contract.Message) *contract.Refusal {
	if h.host != nil && !h.forwardShare(h.host, msg.Raw, msg.Type) {
		return refuse(contract.DetailBusy)
	}
	h.dropAsk(m)
	h.asks = append(h.asks, m)
	h.askRaw[m] = msg.Raw
	return nil
}

// answer sends a host snapshot to the oldest asker still connected: one
// answer per request.
func (h *Hub) answer(msg *contract.Message) *contract.Refusal {
	for len(h.asks) > 0 {
		v := h.asks[0]
		h.asks = h.asks[1:]
		delete(h.askRaw, v)
		if !v.dead {
			h.forward(v, msg.Raw, msg.Type, dirHostToView)
			return nil
		}
	}
	return refuse(contract.DetailNoPendingSnapshot)
}

// dropAsk forgets m's pending snapshot request, if any.
func (h *Hub) dropAsk(m *Member) {
	if _, ok := h.askRaw[m]; !ok {
		return
	}
	delete(h.askRaw, m)
	h.asks = slices.DeleteFunc(h.asks, func(v *Member) bool { return v == m })
}
