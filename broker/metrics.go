package broker

import (
	"github.com/airlock/airlock/broker/contract"
	"github.com/airlock/airlock/broker/relay"
	"github.com/airlock/airlock/metrics"
)

// localLabels is the /local surface's closed label sets, drawn from the
// contract, for the registry to declare at zero (metrics sits below the
// broker and does not read the contract itself).
func localLabels() metrics.Local {
	return metrics.Local{
		Roles: []string{contract.Host.String(), contract.View.String()},
		// Every code a /local/ws error frame can carry.
		RelayRefusals: codes(contract.InvalidMessage, contract.UnknownMessage, contract.ProtocolVersionMismatch,
			contract.SessionMismatch, contract.HostAlreadyConnected),
		AuthRefusals: authRefusals(),
		RelayPairs:   relay.CountedPairs(),
	}
}

// authRefusals pairs each endpoint with the codes refused there
// (PROTOCOL sections 1 to 3, 6 and 11): the Host check refuses
// invalid-origin on every route, the token and cookie checks the rest.
// The /channel reasons are declared by the channel, which owns them.
func authRefusals() map[string][]string {
	out := map[string][]string{}
	for _, e := range metrics.Endpoints {
		out[e] = codes(contract.InvalidOrigin)
	}
	for _, e := range []string{"sessions", "bootstrap", "ws", "v1", "mcp"} {
		out[e] = append(out[e], codes(contract.InvalidCredentials)...)
	}
	for _, e := range []string{"bootstrap", "ws"} {
		out[e] = append(out[e], codes(contract.CredentialExpired, contract.Unavailable)...)
	}
	return out
}

func codes(cs ...contract.Code) []string {
	out := make([]string, len(cs))
	for i, c := range cs {
		out[i] = string(c)
	}
	return out
}

// DeclareLocal declares the /local surface's series at zero on r, as
// Build does: for a reader of the registry that runs no broker (the
// dashboard check in metrics/grafana).
func DeclareLocal(r *metrics.Registry) { r.DeclareLocal(localLabels()) }
