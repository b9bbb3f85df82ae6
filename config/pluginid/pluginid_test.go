package pluginid

import (
	"strings"
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// TestValid: lower-case letters, digits, - and _, starting with a letter
// or digit, 1 to 64 of them.
func TestValid(t *testing.T) {
	good := []string{"a", "0", "notes", "read-notes", "read_notes", "9lives", strings.Repeat("a", 64)}
	bad := []string{"", "Notes", "-a", "_a", "a.b", "a/b", "a b", "é", strings.Repeat("a", 65)}
	for _, id := range good {
		if !Valid(id) {
			t.Errorf("%q refused", id)
		}
	}
	for _, id := range bad {
		if Valid(id) {
			t.Errorf("%q accepted", id)
		}
	}
}
