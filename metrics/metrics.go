// Package metrics defines every Prometheus collector Airlock exports, in one
// place, with label values drawn only from closed sets.
//
// A Registry is created per broker (not global) so tests can run several
// brokers in one process. Label values that come from outside (a tool name
// in a call, a message type on a socket) pass through LabelIn,
// which folds anything outside the admitted set into Other.
package metrics

import (
	"net/http"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/airlock/airlock/executors/wire"
)

// Namespace prefixes every metric name.
const Namespace = "airlock"

// Outcomes of airlock_relay_host_busy_total.
const (
	HostBusyJoinRefused   = "join-refused"   // a view's join refused: close 1013 host-busy
	HostBusyNoticeDropped = "notice-dropped" // a leaving view's viewState or cancel not sent
)

// Directions of airlock_relay_messages_total.
const (
	RelayHostToViews = "host-to-views" // host state, ack and error, to every view
	RelayViewToHost  = "view-to-host"  // a view's request, cancel, ack or error
	RelayHostToView  = "host-to-view"  // a reply or snapshot, to the view that asked
	RelayBroker      = "broker"        // a message the broker wrote itself
)

// Peer kinds, the closed set of the channel_* families' peer label.
// Local has no channel connection: it appears only in channel_calls_total.
const (
	PeerLocal   = "local"
	PeerPage    = "page"
	PeerMachine = "machine"
)

// Endpoints, the closed set of the endpoint label (broker/internal/httpx
// names each route).
var Endpoints = []string{"sessions", "bootstrap", "ws", "channel", "v1", "mcp", Other}

// Other is the label value for anything outside a closed set.
const Other = "OTHER"

// Registry holds every collector.
type Registry struct {
	reg *prometheus.Registry

	buildInfo *prometheus.GaugeVec // version, commit, goversion, wazero_version

	// Tool calls (any executor), labelled by descriptor and tool as admitted.
	ToolCalls          *prometheus.CounterVec   // descriptor, tool, outcome
	ToolCallDuration   *prometheus.HistogramVec // descriptor, tool
	ToolTimeouts       *prometheus.CounterVec   // descriptor, tool
	ToolFetchRequests  *prometheus.HistogramVec // descriptor
	PluginsAdmitted    prometheus.Gauge
	PluginAdmissionErr *prometheus.CounterVec // reason

	// Sessions and the /local/ws relay.
	Sessions       *prometheus.GaugeVec // state: live, tombstone
	SessionsMinted prometheus.Counter
	WSConnections  *prometheus.GaugeVec   // endpoint, role
	RelayMessages  *prometheus.CounterVec // type, direction
	RelayRefusals  *prometheus.CounterVec // code
	RelayDropped   prometheus.Counter
	// RelayDroppedHosts counts hosts dropped because their own traffic
	// filled their queue; RelayHostBusy what the relay did instead of
	// dropping a host that views' traffic reached (outcome).
	RelayDroppedHosts prometheus.Counter
	RelayHostBusy     *prometheus.CounterVec // outcome: HostBusy*
	AuthRefusals      *prometheus.CounterVec // endpoint, code

	// Connections on the broker's listeners (see broker/internal/connlimit).
	ConnectionsOpen    prometheus.Gauge
	ConnectionsRefused prometheus.Counter
	UnixPeersRefused   prometheus.Counter
	ConnectionsEvicted *prometheus.CounterVec // phase: headers, body, idle, upgrade, writing

	// The executor channel.
	ChannelCalls          *prometheus.CounterVec // peer, outcome
	ChannelTimeouts       *prometheus.CounterVec // peer
	ChannelInflight       *prometheus.GaugeVec   // peer
	ChannelPeers          *prometheus.GaugeVec   // peer
	ChannelFramesRejected *prometheus.CounterVec // reason

	// MCP (PROTOCOL section 11).
	MCPSessions *prometheus.GaugeVec   // transport: MCPTransports
	MCPRequests *prometheus.CounterVec // method: MCPMethods, outcome: MCPOutcomes
	// MCPToolCollisions counts a peer's tools listed under a qualified
	// name, or left out, because another tool declares their name.
	MCPToolCollisions *prometheus.CounterVec // outcome: MCPCollisionOutcomes

	// The receipt log (broker/receipts).
	ReceiptsWritten prometheus.Counter
	ReceiptBytes    prometheus.Counter
	ReceiptFailures prometheus.Counter

	relayMessages map[RelayPair]prometheus.Counter // pre-bound by DeclareLocal: every (type, direction) the relay counts
	mcpMethods    map[string]string                // MCP method → its label
}

// Cancelled is the outcome of a tool call whose caller went away or
// cancelled it (an MCP notifications/cancelled, a closed HTTP request)
// before its answer: a metric outcome only, never a rule id on the wire.
const Cancelled = string(wire.Cancelled)

// The closed label sets of the MCP metrics; every pair is declared at 0.
// MCPMethods are the methods as MCP spells them; their labels are Kebab's
// spelling (tools/call is tools-call).
var (
	MCPTransports = []string{"stdio", "http"}
	MCPMethods    = []string{"initialize", "ping", "tools/list", "tools/call",
		"notifications/initialized", "notifications/cancelled", "server/discover", "subscriptions/listen", Other}
	// MCPOutcomes: ok, refused (a tools/call answered isError), error (a
	// JSON-RPC error) or cancelled (the client cancelled the request).
	MCPOutcomes = []string{"ok", "refused", "error", Cancelled}
	// MCPCollisionOutcomes: qualified (listed as <descriptorId>.<tool>)
	// or dropped (that name is not a valid MCP name either).
	MCPCollisionOutcomes = []string{"qualified", "dropped"}
)

// New builds a Registry with every collector registered, plus the Go
// runtime and process collectors.
func New() *Registry {
	r := &Registry{reg: prometheus.NewRegistry()}
	counter := func(name, help string, labels ...string) *prometheus.CounterVec {
		v := prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: Namespace, Name: name, Help: help}, labels)
		r.reg.MustRegister(v)
		return v
	}
	gauge := func(name, help string, labels ...string) *prometheus.GaugeVec {
		v := prometheus.NewGaugeVec(prometheus.GaugeOpts{Namespace: Namespace, Name: name, Help: help}, labels)
		r.reg.MustRegister(v)
		return v
	}
	histogram := func(name, help string, buckets []float64, labels ...string) *prometheus.HistogramVec {
		v := prometheus.NewHistogramVec(prometheus.HistogramOpts{Namespace: Namespace, Name: name, Help: help, Buckets: buckets}, labels)
		r.reg.MustRegister(v)
		return v
	}

	r.ToolCalls = counter("tool_calls_total", "Tool calls answered, by descriptor, tool and outcome (ok or a rule id).", "descriptor", "tool", "outcome")
	r.ToolCallDuration = histogram("tool_call_duration_seconds", "Time from a call's arrival to its answer.",
		[]float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30}, "descriptor", "tool")
	r.ToolTimeouts = counter("tool_timeouts_total", "Tool calls that ran out of time (exec-timeout, page-timeout or machine-timeout).", "descriptor", "tool")
	r.ToolFetchRequests = histogram("tool_fetch_requests_used", "Fetches a call used out of its budget.",
		[]float64{0, 1, 2, 4, 8, 16, 32, 64, 128}, "descriptor")
	r.PluginsAdmitted = gauge("plugins_admitted", "Plugins currently admitted.").WithLabelValues()
	r.PluginAdmissionErr = counter("plugin_admission_failures_total", "Plugins refused admission, by reason.", "reason")

	r.Sessions = gauge("sessions", "Workspace sessions by state.", "state")
	r.SessionsMinted = counter("sessions_minted_total", "Workspace sessions minted.").WithLabelValues()
	r.WSConnections = gauge("ws_connections", "Open WebSocket connections, by endpoint and role.", "endpoint", "role")
	r.RelayMessages = counter("relay_messages_total", "Messages relayed on /local/ws, by type and direction.", "type", "direction")
	r.RelayRefusals = counter("relay_refusals_total", "Frames refused on /local/ws, by error code.", "code")
	r.RelayDropped = counter("relay_dropped_views_total", "Views dropped because they could not keep up.").WithLabelValues()
	r.RelayDroppedHosts = counter("relay_dropped_hosts_total", "Hosts dropped because their own traffic filled their outbound queue.").WithLabelValues()
	r.RelayHostBusy = counter("relay_host_busy_total", "What the relay did instead of dropping a host whose queue views filled, by outcome: "+
		HostBusyJoinRefused+" (a joining view closed 1013 host-busy) or "+HostBusyNoticeDropped+" (a leaving view's viewState or cancel not sent).", "outcome")
	r.AuthRefusals = counter("auth_refusals_total", "Refused authentications, by endpoint and code.", "endpoint", "code")

	r.ConnectionsOpen = gauge("connections_open", "Open connections on the broker's listeners, WebSockets included.").WithLabelValues()
	r.ConnectionsRefused = counter("connections_refused_total", "Connections refused 503 because the connection cap was full and none could be evicted.").WithLabelValues()
	r.UnixPeersRefused = counter("unix_peers_refused_total", "Connections to the Unix socket closed before a byte was read because the process that connected runs as another user.").WithLabelValues()
	r.ConnectionsEvicted = counter("connections_evicted_total", "Connections closed to make room under the cap, by what they were waiting for: headers, body, idle, upgrade (a WebSocket not yet authenticated) or writing (a response the client is not reading).", "phase")

	r.ChannelCalls = counter("channel_calls_total", "Calls routed to an executor, by peer kind and outcome.", "peer", "outcome")
	r.ChannelTimeouts = counter("channel_timeouts_total", "Channel calls settled by timeout, by peer kind.", "peer")
	r.ChannelInflight = gauge("channel_inflight", "Channel calls awaiting an answer, by peer kind.", "peer")
	r.ChannelPeers = gauge("channel_peers", "Connected executor peers, by kind.", "peer")
	r.ChannelFramesRejected = counter("channel_frames_rejected_total", "Channel answer and control frames not taken as sent, by reason: each settled nothing but unknown-rule, a refusal under a rule id outside the vocabulary, settled exec-threw.", "reason")

	r.MCPSessions = gauge("mcp_sessions", "Open MCP sessions, by transport (stdio, http).", "transport")
	r.MCPRequests = counter("mcp_requests_total", "MCP messages received, by method and outcome (ok, refused: a tool call answered isError, error: a JSON-RPC error, cancelled: by the client).", "method", "outcome")
	r.MCPToolCollisions = counter("mcp_tool_collisions_total", "Peer tools listed qualified, or dropped, because another tool declares their name.", "outcome")
	r.ReceiptsWritten = counter("receipts_written_total", "Receipts written to the receipt log.").WithLabelValues()
	r.ReceiptBytes = counter("receipt_bytes_total", "Bytes written to the receipt log.").WithLabelValues()
	r.ReceiptFailures = counter("receipt_failures_total", "Receipts that could not be written (the call answered under audit.fail open, refused audit-unavailable under closed).").WithLabelValues()
	r.buildInfo = gauge("build_info", "Always 1: the running binary's version, VCS commit, Go version and wazero version.",
		"version", "commit", "goversion", "wazero_version")
	r.SetBuildInfo(ReadBuildInfo(""))
	r.zero()

	r.reg.MustRegister(
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
	)
	return r
}

// OrNew returns r, or a new private Registry when r is nil. Every
// constructor that takes a Registry calls it once, so a component built
// without one (a test, `airlock tools`) counts into a registry nobody
// serves and no hot path checks for nil.
func OrNew(r *Registry) *Registry {
	if r == nil {
		return New()
	}
	return r
}

// Handler serves the exposition.
func (r *Registry) Handler() http.Handler {
	return promhttp.HandlerFor(r.reg, promhttp.HandlerOpts{ErrorHandling: promhttp.ContinueOnError})
}

// Gatherer exposes the registry to tests.
func (r *Registry) Gatherer() prometheus.Gatherer { return r.reg }

// LabelIn returns v when it is one of allowed, else Other.
func LabelIn(v string, allowed ...string) string {
	for _, a := range allowed {
		if v == a {
			return v
		}
	}
	return Other
}
