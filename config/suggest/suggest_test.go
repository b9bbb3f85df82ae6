package suggest

import (
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestNearest(t *testing.T) {
	names := []string{"LISTEN", "DATA", "PLUGINS", "EXEC_POOL_SIZE", "LOG_LEVEL"}
	for typed, want := range map[string]string{
		"LISTNE": "LISTEN", "DAT": "DATA", "PLUGIN": "PLUGINS", "LOGLEVEL": "LOG_LEVEL",
		"BIN": "", "TOKEN": "", "": "",
	} {
		if got := Nearest(typed, names); got != want {
			t.Errorf("Nearest(%q) = %q, want %q", typed, got, want)
		}
	}
	// Case alone is a difference: keys are case-sensitive.
	if got := Nearest("timeoutMS", []string{"memoryMiB", "timeoutMs", "roots"}); got != "timeoutMs" {
		t.Errorf("Nearest(timeoutMS) = %q", got)
	}
}
