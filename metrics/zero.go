package metrics

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/airlock/airlock/executors/wire"
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

// zero declares at 0 every series whose labels come from a closed set
// this package knows, so that rate() and alerts see them from the first
// scrape (RATIONALE.md, "Why is every closed label set declared at zero?").
// Sets owned elsewhere are declared by their owners: the /local surface's
// by the broker (DeclareLocal), admission reasons by the plugin catalog,
// /channel reasons by the channel, eviction phases by the connection
// limiter, descriptors and tools by the call router.
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
	for _, s := range []string{"live", "tombstone"} {
		r.Sessions.WithLabelValues(s)
	}
	for _, o := range []string{HostBusyJoinRefused, HostBusyNoticeDropped} {
		r.RelayHostBusy.WithLabelValues(o)
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

// RelayPair is one (type, direction) of airlock_relay_messages_total,
// the type as the contract spells it (focusNode).
type RelayPair struct{ Type, Direction string }

// Local is the closed label sets of the /local surface. Their terms
// (roles, error codes, message types) are the broker's contract, which
// this package, a floor below the broker, does not import: the broker
// hands them in (RATIONALE.md, "Why does the broker hand metrics the
// /local label sets?").
type Local struct {
	// Roles label airlock_ws_connections{endpoint="ws"}.
	Roles []string
	// RelayRefusals are the codes a /local/ws error frame can carry, as
	// the contract spells them (INVALID_MESSAGE).
	RelayRefusals []string
	// AuthRefusals pairs each endpoint with the codes refused there.
	AuthRefusals map[string][]string
	// RelayPairs is every (type, direction) the relay counts.
	RelayPairs []RelayPair
}

// DeclareLocal declares every series of l at 0, in the label style, and
// binds the counters RelayMessage returns. Call it once, before the relay
// counts: RelayMessage reads the bindings without a lock.
func (r *Registry) DeclareLocal(l Local) {
	for _, role := range l.Roles {
		r.WSConnections.WithLabelValues("ws", role)
	}
	for _, c := range l.RelayRefusals {
		r.RelayRefusals.WithLabelValues(Kebab(c))
	}
	for e, codes := range l.AuthRefusals {
		for _, c := range codes {
			r.AuthRefusals.WithLabelValues(e, Kebab(c))
		}
	}
	bound := make(map[RelayPair]prometheus.Counter, len(l.RelayPairs))
	for _, p := range l.RelayPairs {
		bound[p] = r.RelayMessages.WithLabelValues(Kebab(p.Type), p.Direction)
	}
	r.relayMessages = bound
}

// RelayMessage is the counter of one relayed message of type typ (as the
// contract spells it) in direction dir, bound once by DeclareLocal so the
// relay's hot path neither allocates nor respells. A pair outside
// Local.RelayPairs is counted under Other.
func (r *Registry) RelayMessage(typ, dir string) prometheus.Counter {
	if c, ok := r.relayMessages[RelayPair{typ, dir}]; ok {
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
