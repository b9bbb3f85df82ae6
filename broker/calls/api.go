package calls

import (
	"context"
	"errors"
	"fmt"
	"net/http"

	"github.com/airlock/airlock/broker/contract"
	"github.com/airlock/airlock/broker/internal/httpx"
	"github.com/airlock/airlock/broker/receipts"
	"github.com/airlock/airlock/executors/wire"
	"github.com/airlock/airlock/metrics"
)

// MaxCallBytes caps a POST /v1/calls body.
const MaxCallBytes = 16 << 20

// API serves GET /v1/tools and POST /v1/calls, authenticated by the launch
// token. It is a broker component.
type API struct {
	router  *Router
	token   httpx.Token
	metrics *metrics.Registry
	plugins func() any // the catalog's statuses, for GET /v1/plugins
}

// NewAPI serves router's calls to holders of the launch token; plugins
// reports the local catalog (admitted and refused folders).
func NewAPI(router *Router, token string, reg *metrics.Registry, plugins func() any) *API {
	return &API{router: router, token: httpx.NewToken(token), metrics: metrics.OrNew(reg), plugins: plugins}
}

// Mount registers the routes.
func (a *API) Mount(mux *http.ServeMux) {
	mux.Handle("GET /v1/tools", httpx.TokenGuard(a.token, a.refused, http.HandlerFunc(a.tools)))
	mux.Handle("POST /v1/calls", httpx.TokenGuard(a.token, a.refused, http.HandlerFunc(a.call)))
	mux.Handle("GET /v1/plugins", httpx.TokenGuard(a.token, a.refused, http.HandlerFunc(a.pluginList)))
}

// Drain refuses new calls with shutting-down.
func (a *API) Drain() { a.router.Drain() }

// Close refuses new calls and waits for those in flight until ctx ends,
// then returns ctx's cause (RATIONALE.md, "What does Close do when its
// context ends?"). It holds no call itself: a call still running is forced
// by its executor's Close (the runtime, the channel).
func (a *API) Close(ctx context.Context) error {
	a.router.Drain()
	if err := a.router.Wait(ctx); err != nil {
		return fmt.Errorf("calls: close: %w", err)
	}
	return nil
}

func (a *API) refused(endpoint string, c contract.Code) {
	a.metrics.AuthRefused(endpoint, string(c))
}

func (a *API) tools(w http.ResponseWriter, _ *http.Request) {
	ds := a.router.Descriptors()
	if ds == nil {
		ds = []wire.Descriptor{}
	}
	httpx.WriteJSON(w, http.StatusOK, map[string]any{"descriptors": ds})
}

// pluginList answers {"plugins":[…]}: every plugin folder the broker's own
// catalog saw, admitted or refused with its reason (an addition to the
// contract, for `airlock tools --broker`).
func (a *API) pluginList(w http.ResponseWriter, _ *http.Request) {
	httpx.WriteJSON(w, http.StatusOK, map[string]any{"plugins": a.plugins()})
}

// call answers 200 with the answer envelope, ok or refused. A body that is
// not a call envelope is answered 400 with a refusal envelope, and counted
// like any other refusal: one over the cap, or that could not be read, is
// malformed (the client's fault, never exec-threw).
func (a *API) call(w http.ResponseWriter, r *http.Request) {
	body, err := httpx.ReadBody(w, r, MaxCallBytes)
	if err != nil {
		err = unreadable(err)
	} else {
		var c wire.Call
		if c, err = wire.ParseCall(body); err == nil {
			writeAnswer(w, http.StatusOK, a.router.Call(WithDoor(r.Context(), receipts.DoorV1), c))
			return
		}
	}
	ans := wire.RefuseBody(body, err)
	a.router.observe(Route{}, false, wire.Call{}, outcomeOf(r.Context(), ans), ans, 0)
	writeAnswer(w, http.StatusBadRequest, ans)
}

// writeAnswer writes an answer envelope, encoded by hand into a pooled
// buffer (wire.Answer.AppendJSON).
func writeAnswer(w http.ResponseWriter, status int, a wire.Answer) {
	httpx.WriteEncoded(w, status, a.AppendJSON)
}

// unreadable names a body that could not be read as malformed, with static
// text.
func unreadable(err error) *wire.Error {
	if errors.Is(err, httpx.ErrBodyTooLarge) {
		return &wire.Error{Rule: wire.Malformed, Detail: "the call body is over 16 MiB"}
	}
	return &wire.Error{Rule: wire.Malformed, Detail: "the call body could not be read"}
}
