package relay

import (
	"encoding/json"

	"github.com/airlock/airlock/broker/contract"
)

// request is one view request in flight: who asked, of which family, about
// what. The broker remembers who asked, never a request's content.
type request struct {
	family contract.Family
	target string // canonical JSON; "" for candidates
	view   *Member
}

// fromViewRequest handles a request or a cancel from a view.
func (h *Hub) fromViewRequest(m *Member, msg *contract.Message) *contract.Refusal {
	if msg.Spec.Kind == contract.Cancel {
		return h.cancel(m, msg)
	}
	switch {
	case h.host == nil:
		return refuse(contract.DetailNoHost)
	case h.pending[msg.RequestID] != nil:
		return refuse(contract.DetailDuplicateRequest)
	case m.inflight >= h.opts.MaxRequestsPerView:
		return refuse(contract.DetailBusy)
	case len(h.pending) >= MaxPending:
		return refuse(contract.DetailTooManyRequests)
	case !h.forwardShare(h.host, msg.Raw, msg.Type):
		return refuse(contract.DetailBusy)
	}
	h.pending[msg.RequestID] = &request{family: msg.Spec.Family, target: msg.Target, view: m}
	m.inflight++
	h.unretire(msg.RequestID)
	return nil
}

// cancel forwards a view's cancel of its own request and forgets it, so
// the host's late reply is dropped silently.
func (h *Hub) cancel(m *Member, msg *contract.Message) *contract.Refusal {
	req := h.pending[msg.RequestID]
	switch {
	case req == nil:
		return refuse(contract.DetailUnknownRequest)
	case req.view != m:
		return refuse(contract.DetailNotOwner)
	case req.family != msg.Spec.Family:
		return refuse(contract.DetailKindMismatch)
	case req.target != msg.Target:
		return refuse(contract.DetailTargetMismatch)
	case !h.forwardShare(h.host, msg.Raw, msg.Type):
		return refuse(contract.DetailBusy) // still in flight: the view may cancel again
	}
	h.settle(msg.RequestID, true)
	return nil
}

// fromHostReply routes a host's progress or result to the requesting view
// only. A terminal result ends the request.
func (h *Hub) fromHostReply(msg *contract.Message) *contract.Refusal {
	req := h.pending[msg.RequestID]
	if req == nil {
		if _, late := h.retired[msg.RequestID]; late {
			return nil // late reply for a cancelled or abandoned request
		}
		return refuse(contract.DetailUnknownRequest)
	}
	if r := matches(req, msg); r != nil {
		return r
	}
	if msg.Spec.Kind == contract.Result {
		h.settle(msg.RequestID, false)
	}
	h.forward(req.view, msg.Raw, msg.Type, dirHostToView)
	return nil
}

// matches checks that a reply belongs to req: same family, same target
// (for candidates: the requesting view's id).
func matches(req *request, msg *contract.Message) *contract.Refusal {
	switch {
	case req.family != msg.Spec.Family:
		return refuse(contract.DetailKindMismatch)
	case req.family == contract.Candidates && msg.ViewID != req.view.id:
		return refuse(contract.DetailViewMismatch)
	case req.family != contract.Candidates && req.target != msg.Target:
		return refuse(contract.DetailTargetMismatch)
	}
	return nil
}

// cancelRequestsOf abandons every request of a view that left and tells
// the host with a synthesized cancel of the right family.
func (h *Hub) cancelRequestsOf(m *Member) {
	for id, req := range h.pending {
		if req.view != m {
			continue
		}
		h.settle(id, true)
		typ, ok := contract.CancelOf(req.family)
		if ok {
			h.notifyHost(typ, synthesizedCancel{id, json.RawMessage(req.target), contract.CancelReasonViewDisconnected})
		}
	}
}

// settle ends a request; a cancelled or abandoned one is remembered
// (bounded, oldest forgotten first) so late replies are dropped instead of
// refused.
func (h *Hub) settle(id string, retire bool) {
	if req := h.pending[id]; req != nil {
		req.view.inflight--
		delete(h.pending, id)
	}
	if !retire {
		return
	}
	if len(h.retOrd) >= maxRetired {
		old := h.retOrd[0]
		h.retOrd = h.retOrd[1:]
		if h.retired[old.id] == old.gen {
			delete(h.retired, old.id)
		}
	}
	h.retGen++
	h.retired[id] = h.retGen
	h.retOrd = append(h.retOrd, retiredID{id, h.retGen})
}

// clearPending forgets every request in flight (the host left, or the
// session closed), and with them every view's in-flight count.
func (h *Hub) clearPending() {
	for _, req := range h.pending {
		req.view.inflight = 0
	}
	clear(h.pending)
}

// unretire forgets a retired id that a new request reuses; its entry in
// retOrd no longer matches and is skipped when it ages out.
func (h *Hub) unretire(id string) { delete(h.retired, id) }

// retiredID is one remembered id with the generation it was retired at.
type retiredID struct {
	id  string
	gen uint64
}
