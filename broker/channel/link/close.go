package link

// Close reasons on /channel (PROTOCOL section 6). They are the whole
// vocabulary a peer may see in a close frame from the broker, besides the
// /local code CREDENTIAL_EXPIRED (4402) that closes a page whose session
// ended; each names the close code it goes with.
const (
	// ReasonUnauthenticated closes (1008) a connection with a foreign
	// Origin, a loopback page without the view cookie when one is
	// required, or an environment whose hello is missing, late or
	// malformed.
	ReasonUnauthenticated = "executor-unauthenticated"
	// ReasonBearerRefused closes (1008) an environment whose bearer is not
	// paired, or whose pairing was revoked while it was connected.
	ReasonBearerRefused = "bearer-refused"
	// ReasonPageReplaced closes (1000) a page executor when a newer page
	// connects.
	ReasonPageReplaced = "page-replaced"
	// ReasonEnvironmentReplaced closes (1000) an environment when another
	// connection authenticates under the same pairing. `airlock env` stops
	// rather than reconnect, so two environments sharing one bearer do not
	// take turns evicting each other.
	ReasonEnvironmentReplaced = "environment-replaced"
	// ReasonGoingAway closes (1001) every peer when the broker stops.
	ReasonGoingAway = "going away"
)
