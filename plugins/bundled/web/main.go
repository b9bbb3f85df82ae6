//go:build wasip1

// Command web is the bundled web plugin: fetch one URL through the
// broker, which allows only the hosts in the plugin's allowedHosts.
package main

import (
	"encoding/json"
	"strings"
	"unicode/utf8"

	"github.com/airlock/airlock/plugins/sdk"
)

// maxBody is how much of the body fetch_url returns, as text.
const maxBody = 64 << 10

func init() { sdk.Handle("fetch_url", fetchURL) }

func main() { sdk.Main() }

func fetchURL(args json.RawMessage) (any, error) {
	var in struct {
		URL string `json:"url"`
	}
	if err := json.Unmarshal(args, &in); err != nil {
		return nil, err
	}
	resp, err := sdk.Fetch(sdk.Request{Method: "GET", URL: in.URL})
	if err != nil {
		return nil, err
	}
	return map[string]any{
		"status":      resp.Status,
		"contentType": resp.Header.Get("Content-Type"),
		"body":        text(resp.Body),
	}, nil
}

// text is the body's first maxBody bytes, cut on a rune boundary, with
// invalid UTF-8 replaced so the answer stays valid JSON text.
func text(b []byte) string {
	if len(b) > maxBody {
		b = b[:maxBody]
		// Drop a multi-byte character the cut split in two.
		for j := len(b) - 1; j >= max(0, len(b)-utf8.UTFMax); j-- {
			if utf8.RuneStart(b[j]) {
				if !utf8.FullRune(b[j:]) {
					b = b[:j]
				}
				break
			}
		}
	}
	return strings.ToValidUTF8(string(b), "\uFFFD")
}
