package session

import (
	"net/http/httptest"
	"strings"
	"testing"
)

// TestDecodeBodyCaseFold: a /local body is read with the strict walk, so
// keys equal under case folding are duplicates and a key that only folds
// to a field is unknown (PROTOCOL section 1).
func TestDecodeBodyCaseFold(t *testing.T) {
	type bootstrapBody struct {
		WorkspaceSessionID string `json:"workspaceSessionId"`
		ViewCredential     string `json:"viewCredential"`
	}
	for body, ok := range map[string]bool{
		`{"workspaceSessionId":"ws_a","viewCredential":"c"}`:                                      true,
		`{"workspaceSessionId":"ws_a","viewCredential":"c","ViewCredential":"d"}`:                 false,
		`{"workspaceSessionId":"ws_a","WorkspaceSessionID":"ws_b","viewCredential":"c"}`:          false,
		`{"WorkspaceSessionId":"ws_a","viewCredential":"c"}`:                                      false,
		`{"workspaceSessionId":"ws_a","viewCredential":"c","extra":{"k":1,"` + "\u212a" + `":2}}`: false,
	} {
		var v bootstrapBody
		r := httptest.NewRequest("POST", "/local/bootstrap", strings.NewReader(body))
		err := decodeBody(httptest.NewRecorder(), r, &v)
		if (err == nil) != ok {
			t.Errorf("%s: %v", body, err)
		}
		if ok && (v.WorkspaceSessionID != "ws_a" || v.ViewCredential != "c") {
			t.Errorf("%s decoded as %+v", body, v)
		}
	}
}
