package contract

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Size bounds of PROTOCOL section 4.
const (
	// MaxResultBytes bounds a captureInspectResult or exportResult
	// payload.
	MaxResultBytes = 16 << 20
	// MaxGraphBytes bounds the gzip file a graphPublishRequest carries,
	// after base64 decoding (the website's 10 MB file limit).
	MaxGraphBytes = 10 << 20
)

// idPattern is what a requestId (PROTOCOL section 4) and a viewId may
// hold. Broker-made view ids ("v_" and URL-safe base64) fit it; anything
// else (a control, bidi-override or separator character included) names
// no view and is refused before it can be routed or logged.
var idPattern = regexp.MustCompile(`^[A-Za-z0-9._:-]{1,128}$`)

func validRequestID(id string) bool { return idPattern.MatchString(id) }

// payload wraps a message for the per-type checks.
type payload struct{ m *Message }

func (p payload) raw(key string) (json.RawMessage, bool) {
	i, known := payloadIndex[key]
	if !known {
		panic("contract: payload member " + key + " is not in payloadKeys")
	}
	v := p.m.payload[i]
	return v, v != nil
}

func (p payload) str(key string) (string, bool) {
	v, ok := p.raw(key)
	if !ok {
		return "", false
	}
	return stringValue(v)
}

// requestID requires a well-formed requestId.
func (p payload) requestID() *Refusal {
	if p.m.RequestID == "" {
		return invalid(DetailRequestID)
	}
	return nil
}

// target requires a non-null target and records its canonical form, which
// is what replies are matched against.
func (p payload) target() *Refusal {
	v, ok := p.raw("target")
	if !ok || isNull(v) {
		return invalid(DetailTarget)
	}
	c, err := canonical(v)
	if err != nil {
		return invalid(DetailTarget)
	}
	p.m.Target = c
	return nil
}

// viewID reads payload.viewId; when own is set it must equal it.
func (p payload) viewID(required bool, own string) *Refusal {
	v, present := p.raw("viewId")
	if !present {
		if required {
			return invalid(DetailViewID)
		}
		return nil
	}
	id, ok := stringValue(v)
	if !ok || !idPattern.MatchString(id) || (own != "" && id != own) {
		return invalid(DetailViewID)
	}
	p.m.ViewID = id
	return nil
}

// url checks an optional (or required) http(s) URL field.
func (p payload) url(key string, required bool) *Refusal {
	v, present := p.raw(key)
	if !present {
		if required {
			return invalid(DetailURL)
		}
		return nil
	}
	s, ok := stringValue(v)
	if !ok || !httpURL(s) {
		return invalid(DetailURL)
	}
	return nil
}

func (p payload) oneOf(key string, allowed ...string) (string, bool) {
	s, ok := p.str(key)
	if !ok {
		return "", false
	}
	for _, a := range allowed {
		if s == a {
			return s, true
		}
	}
	return "", false
}

func first(rs ...func() *Refusal) *Refusal {
	for _, r := range rs {
		if err := r(); err != nil {
			return err
		}
	}
	return nil
}

func checkRelayedError(p payload, _ Context) *Refusal {
	if _, ok := p.str("message"); !ok {
		return invalid(DetailPayload)
	}
	return nil
}

func checkSnapshotRequest(p payload, _ Context) *Refusal {
	v, ok := p.raw("lastHostSequence")
	if !ok {
		return invalid(DetailPayload)
	}
	if n, isInt := intValue(v); !isNull(v) && (!isInt || n < 0) {
		return invalid(DetailPayload)
	}
	return nil
}

func checkSnapshot(p payload, _ Context) *Refusal {
	v, ok := p.raw("atHostSequence")
	if n, isInt := intValue(v); !ok || !isInt || n < 0 {
		return invalid(DetailPayload)
	}
	if st, ok := p.raw("state"); !ok || !isObject(st) {
		return invalid(DetailPayload)
	}
	return nil
}

func checkRevealNode(p payload, _ Context) *Refusal {
	if id, ok := p.str("nodeId"); !ok || id == "" {
		return invalid(DetailPayload)
	}
	return nil
}

func checkTargeted(p payload, _ Context) *Refusal {
	return first(p.requestID, p.target)
}

func checkSourceEditRequest(p payload, c Context) *Refusal {
	return first(p.requestID, p.target, func() *Refusal { return p.viewID(false, c.ViewID) })
}

func checkBulkResult(p payload, c Context) *Refusal {
	if r := checkTargeted(p, c); r != nil {
		return r
	}
	if p.m.payloadLen > MaxResultBytes {
		return invalid(DetailResultTooLarge)
	}
	return nil
}

func checkGraphPublishRequest(p payload, c Context) *Refusal {
	if r := checkTargeted(p, c); r != nil {
		return r
	}
	s, ok := p.str("graphGzipBase64")
	// Go's decoder skips line breaks; the contract's base64 (and its JSON
	// Schema) has none, so a view and the broker read the same bytes.
	if !ok || strings.ContainsAny(s, "\r\n") {
		return invalid(DetailGraphBase64)
	}
	if base64.StdEncoding.DecodedLen(len(s)) > MaxGraphBytes+2 {
		return invalid(DetailGraphTooLarge)
	}
	gz, err := base64.StdEncoding.DecodeString(s)
	switch {
	case err != nil:
		return invalid(DetailGraphBase64)
	case len(gz) > MaxGraphBytes:
		return invalid(DetailGraphTooLarge)
	case len(gz) < 2 || gz[0] != 0x1f || gz[1] != 0x8b:
		return invalid(DetailGraphNotGzip)
	}
	return nil
}

func checkGraphPublishState(p payload, c Context) *Refusal {
	if r := checkTargeted(p, c); r != nil {
		return r
	}
	phase, ok := p.oneOf("phase", "signing_in", "uploading")
	if !ok {
		return invalid(DetailPayload)
	}
	return p.url("connectUrl", phase == "signing_in")
}

func checkGraphPublishResult(p payload, c Context) *Refusal {
	if r := checkTargeted(p, c); r != nil {
		return r
	}
	status, ok := p.oneOf("status", "published", "failed", "cancelled")
	if !ok {
		return invalid(DetailPayload)
	}
	published := status == "published"
	return first(func() *Refusal { return p.url("graphUrl", published) },
		func() *Refusal { return p.url("shareUrl", published) })
}

func checkCandidateRequest(p payload, c Context) *Refusal {
	return first(p.requestID, func() *Refusal { return p.viewID(true, c.ViewID) })
}

func checkCandidateResult(p payload, _ Context) *Refusal {
	return first(p.requestID, func() *Refusal { return p.viewID(true, "") })
}

// httpURL accepts only absolute http or https URLs with a host and no
// userinfo, so a host cannot make a view open javascript:, data: or file:
// links.
func httpURL(s string) bool {
	u, err := url.Parse(s)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") {
		return false
	}
	return u.Host != "" && u.User == nil && u.Opaque == ""
}

func isNull(v json.RawMessage) bool { return string(v) == "null" }

func isObject(v json.RawMessage) bool { return len(v) > 0 && v[0] == '{' }

// stringValue decodes a JSON string. One without escapes is its bytes
// between the quotes, taken without the decoder's allocations.
func stringValue(v json.RawMessage) (string, bool) {
	if len(v) == 0 || v[0] != '"' {
		return "", false
	}
	if inner, ok := plainString(v); ok {
		return string(inner), true
	}
	var s string
	if json.Unmarshal(v, &s) != nil {
		return "", false
	}
	return s, true
}

// plainString returns the text of v, a JSON string with no escape
// sequence, when it is one: quoted, no quote, backslash or control
// character inside, valid UTF-8. Such text is exactly what json.Unmarshal
// would give; anything else is left to it.
func plainString(v json.RawMessage) ([]byte, bool) {
	if len(v) < 2 || v[0] != '"' || v[len(v)-1] != '"' {
		return nil, false
	}
	inner := v[1 : len(v)-1]
	for _, b := range inner {
		if b < 0x20 || b == '"' || b == '\\' {
			return nil, false
		}
	}
	return inner, utf8.Valid(inner)
}

// stringIs reports whether v is the JSON string want, without allocating
// when v has no escapes.
func stringIs(v json.RawMessage, want string) bool {
	if inner, ok := plainString(v); ok {
		return string(inner) == want
	}
	s, ok := stringValue(v)
	return ok && s == want
}

// internedString is stringValue that returns the string from names
// (each name mapped to itself) when it is there, without allocating.
func internedString(v json.RawMessage, names map[string]string) (string, bool) {
	if inner, ok := plainString(v); ok {
		if s, ok := names[string(inner)]; ok {
			return s, true
		}
	}
	return stringValue(v)
}

// intValue decodes a JSON integer written without fraction or exponent
// that fits int64.
func intValue(v json.RawMessage) (int64, bool) {
	if len(v) == 0 || bytes.ContainsAny(v, ".eE") {
		return 0, false
	}
	n, err := strconv.ParseInt(string(v), 10, 64)
	return n, err == nil
}

// isOne reports whether v is the JSON integer 1.
func isOne(v json.RawMessage) bool {
	n, ok := intValue(v)
	return ok && n == 1
}

// canonical re-encodes a JSON value with sorted keys and no insignificant
// white space, numbers kept as written, so equal targets compare equal
// however the host formatted them.
func canonical(v json.RawMessage) (string, error) {
	dec := json.NewDecoder(bytes.NewReader(v))
	dec.UseNumber()
	var x any
	if err := dec.Decode(&x); err != nil {
		return "", err
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(x); err != nil {
		return "", err
	}
	return string(bytes.TrimSuffix(buf.Bytes(), []byte("\n"))), nil
}
