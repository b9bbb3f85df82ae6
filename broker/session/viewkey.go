package session

import (
	"net/http"
	"strings"

	"github.com/airlock/airlock/broker/contract"
)

// ViewKeyOffWarning is logged at start-up when local.view_key is off: a
// view is then admitted on its cookie alone, as the seed did.
const ViewKeyOffWarning = "local.view_key is off: a view cookie alone opens its session, so a process on another loopback port that a page of this browser sends the cookie to can replay it"

// viewKeyOf is the view key a request offers as the subprotocol
// airlock.view-key.<key> (PROTOCOL section 3). offered is false when it
// offers none; several are offered as one wrong key ("").
func viewKeyOf(r *http.Request) (key string, offered bool) {
	for _, v := range r.Header.Values("Sec-WebSocket-Protocol") {
		for p := range strings.SplitSeq(v, ",") {
			k, ok := strings.CutPrefix(strings.TrimSpace(p), contract.ViewKeyProtocolPrefix)
			if !ok {
				continue
			}
			if offered {
				return "", true
			}
			key, offered = k, true
		}
	}
	return key, offered
}

// admit is the role r opens on /local/ws (viewOnly false) or as a page
// executor (viewOnly true): the cookie, Origin and expiry checks of
// authenticate, then for a view the view key, so that a cookie sent to a
// process on another port of the same host opens nothing (broker/channel/RATIONALE.md,
// "Why a view key beside the view cookie?"). With local.view_key off a
// view that offers no key is admitted on its cookie; one that offers a
// key must offer the right one.
func (s *Service) admit(r *http.Request, origin string, viewOnly bool) (*Session, contract.Role, error) {
	sess, role, err := s.store.authenticate(r.Cookies(), origin, viewOnly)
	if err != nil || role != contract.View {
		return sess, role, err
	}
	key, offered := viewKeyOf(r)
	if (offered || s.opts.Local.ViewKey) && !s.store.viewKeyMatches(sess, key) {
		return nil, 0, ErrNoViewKey
	}
	return sess, role, nil
}
