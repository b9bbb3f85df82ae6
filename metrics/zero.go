package metrics

import (
	"github.com/airlock/airlock/broker/contract"
	"github.com/airlock/airlock/executors/wire"
	"github.com/prometheus/client_golang/prometheus"
)

// Outcomes is the closed set of a tool call's outcome label: ok, every
// rule id, and Cancelled.
func Outcomes() []string {
	out := make([]string, 0, len(wire.Rules)+2)
	out = append(out, "ok")
	for _, r := range wire.Rules {
		out = append(out, string(r))
	}
	return append(out, Cancelled)
}

// authRefusals pairs each endpoint with the codes refused there
// (PROTOCOL sections 1 to 3, 6 and 11): the Host check refuses
// invalid-origin on every route, the token and cookie checks the rest.
// The /channel reasons are declared by the channel, which owns them.
func authRefusals() map[string][]contract.Code {
	out := map[string][]contract.Code{}
	for _, e := range Endpoints {
		out[e] = []contract.Code{contract.InvalidOrigin}
	}
	for _, e := range []string{"sessions", "bootstrap", "ws", "v1", "mcp"} {
		out[e] = append(out[e], contract.InvalidCredentials)
	}
	for _, e := range []string{"bootstrap", "ws"} {
		out[e] = append(out[e], contract.CredentialExpired, contract.Unavailable)
	}
	return out
}

// zero declares at 0 every series whose labels come from a closed set
// this package knows, so that rate() and alerts see them from the first
// scrape (RATIONALE.md, "Why is every closed label set declared at zero?").
// Sets owned elsewhere are declared by their owners: admission reasons by
// the plugin catalog, /channel reasons by the channel, eviction phases by
// the connection limiter, descriptors and tools by the call router.
func (r *Registry) zero() {
	outcomes := Outcomes()
	// A call for a descriptor nobody admitted (or a body that is not a
	// call) is counted under OTHER, OTHER.
	for _, o := range outcomes {
		r.ToolCalls.WithLabelValues(Other, Other, o)
	}
	r.ToolCallDuration.WithLabelValues(Other, Other)
	r.ToolTimeouts.WithLabelValues(Other, Other)
	for _, p := range []string{PeerLocal, PeerPage, PeerMachine} {
		for _, o := range outcomes {
			r.ChannelCalls.WithLabelValues(p, o)
		}
	}
	for _, p := range []string{PeerPage, PeerMachine} {
		r.ChannelTimeouts.WithLabelValues(p)
		r.ChannelInflight.WithLabelValues(p)
		r.ChannelPeers.WithLabelValues(p)
		r.WSConnections.WithLabelValues("channel", p)
	}
	for _, role := range []contract.Role{contract.Host, contract.View} {
		r.WSConnections.WithLabelValues("ws", role.String())
	}
	for _, s := range []string{"live", "tombstone"} {
		r.Sessions.WithLabelValues(s)
	}
	for _, o := range []string{HostBusyJoinRefused, HostBusyNoticeDropped} {
		r.RelayHostBusy.WithLabelValues(o)
	}
	// Every code a /local/ws error frame can carry.
	for _, c := range []contract.Code{contract.InvalidMessage, contract.UnknownMessage, contract.ProtocolVersionMismatch,
		contract.SessionMismatch, contract.HostAlreadyConnected} {
		r.RelayRefusals.WithLabelValues(Kebab(string(c)))
	}
	for e, codes := range authRefusals() {
		for _, c := range codes {
			r.AuthRefusals.WithLabelValues(e, Kebab(string(c)))
		}
	}
	r.relayMessages = map[relayKey]prometheus.Counter{}
	for _, k := range relayPairs() {
		r.relayMessages[k] = r.RelayMessages.WithLabelValues(Kebab(k.typ), k.dir)
	}
	r.mcpMethods = map[string]string{}
	for _, m := range MCPMethods {
		r.mcpMethods[m] = Kebab(m)
	}
	for _, t := range MCPTransports {
		r.MCPSessions.WithLabelValues(t)
	}
	for _, m := range MCPMethods {
		for _, o := range MCPOutcomes {
			r.MCPRequests.WithLabelValues(Kebab(m), o)
		}
	}
	for _, o := range MCPCollisionOutcomes {
		r.MCPToolCollisions.WithLabelValues(o)
	}
}

// relayPairs is every (type, direction) the relay counts, from the
// contract's table (PROTOCOL section 4.5): a client's message in the
// direction its sender's role sends it, a host's replies and snapshots to
// one view, the broker's own messages and the cancels it writes for a view
// that left. hello is the handshake and is not relayed.
func relayPairs() []relayKey {
	var out []relayKey
	for _, t := range contract.Types() {
		s, _ := contract.Lookup(t)
		switch {
		case t == "hello":
			continue
		case s.From == 0:
			out = append(out, relayKey{t, RelayBroker})
			continue
		}
		if s.From&contract.View != 0 {
			out = append(out, relayKey{t, RelayViewToHost})
		}
		if s.From&contract.Host != 0 {
			dir := RelayHostToViews
			if t == "snapshot" || s.Kind == contract.Progress || s.Kind == contract.Result {
				dir = RelayHostToView
			}
			out = append(out, relayKey{t, dir})
		}
		if s.Kind == contract.Cancel {
			out = append(out, relayKey{t, RelayBroker})
		}
	}
	return out
}

// RelayMessage is the counter of one relayed message of type typ (as the
// contract spells it) in direction dir, bound once in New so the relay's
// hot path neither allocates nor respells. A pair the contract does not
// route is counted under Other.
func (r *Registry) RelayMessage(typ, dir string) prometheus.Counter {
	if c, ok := r.relayMessages[relayKey{typ, dir}]; ok {
		return c
	}
	return r.RelayMessages.WithLabelValues(Other, dir)
}

// MCPRequest counts one MCP message by method (as MCP spells it; one
// outside MCPMethods is Other) and outcome.
func (r *Registry) MCPRequest(method, outcome string) {
	l, ok := r.mcpMethods[method]
	if !ok {
		l = Other
	}
	r.MCPRequests.WithLabelValues(l, outcome).Inc()
}

// AuthRefused counts a refused authentication at endpoint with a /local
// code (INVALID_ORIGIN) or a /channel reason, in the label style.
func (r *Registry) AuthRefused(endpoint, code string) {
	r.AuthRefusals.WithLabelValues(endpoint, Kebab(code)).Inc()
}

// RelayRefused counts a frame refused on /local/ws with code.
func (r *Registry) RelayRefused(code string) {
	r.RelayRefusals.WithLabelValues(Kebab(code)).Inc()
}
