package e2e

import (
	"strings"
	"testing"
)

// TestLogsNeverCarryTheToken runs a broker at debug level and does what
// would tempt a careless log line: near-miss tokens that contain the real
// one, a wrong token on every authenticated route, a token in a call's
// args, calls that succeed and calls that are refused. Then it reads
// everything the broker printed. (Every end-to-end broker is checked the
// same way at cleanup; this test makes the attempt deliberate.)
func TestLogsNeverCarryTheToken(t *testing.T) {
	t.Parallel()
	w := newFixtureWorld(t, "AIRLOCK_LOG_LEVEL=debug")
	for _, presented := range []string{testToken + "x", "x" + testToken, testToken[1:], strings.ToUpper(testToken)} {
		for _, route := range []struct{ method, path string }{{"GET", "/v1/tools"}, {"POST", "/v1/calls"}, {"GET", "/v1/plugins"}, {"POST", "/local/sessions"}} {
			code, body, _ := w.p.do(route.method, route.path, map[string]string{"X-Tensorviz-Token": presented}, []byte(`{}`))
			if code != 401 {
				t.Errorf("%s %s with a near-miss token: %d", route.method, route.path, code)
			}
			if strings.Contains(string(body), testToken) {
				t.Errorf("%s %s: the error body carries the token", route.method, route.path)
			}
		}
	}
	// The token inside a call (a caller pasting it into args) is the
	// caller's business, but the broker must not log args either.
	w.call(t, "echo", `{"note":"`+testToken+`"}`)
	w.call(t, "loop", `{"note":"`+testToken+`"}`)
	postCall(t, w.p, `{"v":1,"callId":"c","tool":"echo","descriptorId":"fx","args":{},"boundsEcho":{},"why":"`+testToken+`"}`)
	w.p.Stop()
	out := w.p.stdout.String() + w.p.Stderr()
	if !strings.Contains(out, `"level":"DEBUG"`) {
		t.Fatal("the broker logged nothing at debug level; the test would prove nothing")
	}
	if strings.Contains(out, testToken) {
		for _, line := range scanLines(out) {
			if strings.Contains(line, testToken) {
				t.Errorf("a log line carries the token: %.200s", strings.ReplaceAll(line, testToken, "<TOKEN>"))
			}
		}
	}
}
