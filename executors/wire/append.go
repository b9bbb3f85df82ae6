package wire

import (
	"bytes"
	"encoding/json"
	"strconv"
	"unicode/utf8"
)

// AppendJSON appends the answer's one valid shape, the bytes MarshalJSON
// returns, to dst. It is what every answer on the call path is encoded
// with: the fields are written in order without reflection, and observed
// is compacted once, straight into dst (it is compact already when it
// came from an executor or ParseAnswer, so that pass only checks it).
// RATIONALE.md, "Why are answers encoded by hand?"
func (a Answer) AppendJSON(dst []byte) ([]byte, error) {
	start := len(dst)
	dst = append(dst, `{"v":`...)
	dst = strconv.AppendInt(dst, int64(a.V), 10)
	dst = append(dst, `,"callId":`...)
	dst = appendString(dst, a.CallID)
	if a.OK {
		dst = append(dst, `,"ok":true,"observed":`...)
		if a.Observed == nil {
			dst = append(dst, "null"...)
		} else {
			buf := bytes.NewBuffer(dst)
			if err := json.Compact(buf, a.Observed); err != nil {
				return dst[:start], err
			}
			dst = buf.Bytes()
		}
	} else {
		dst = append(dst, `,"ok":false,"refused":`...)
		dst = appendString(dst, string(a.Refused))
		dst = append(dst, `,"why":`...)
		dst = appendString(dst, a.Why)
	}
	if a.Budget != nil {
		dst = append(dst, `,"budget":{"requestsUsed":`...)
		dst = strconv.AppendInt(dst, int64(a.Budget.RequestsUsed), 10)
		dst = append(dst, `,"requestsLimit":`...)
		dst = strconv.AppendInt(dst, int64(a.Budget.RequestsLimit), 10)
		dst = append(dst, '}')
	}
	return append(dst, '}'), nil
}

// appendString appends s as a JSON string exactly as encoding/json writes
// it without HTML escaping: printable ASCII other than the quote and the
// backslash is copied, anything else goes through the encoder.
func appendString(dst []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c == '"' || c == '\\' || c >= utf8.RuneSelf {
			out, _ := marshal(s) // a string always encodes
			return append(dst, out...)
		}
	}
	dst = append(dst, '"')
	dst = append(dst, s...)
	return append(dst, '"')
}
