package e2e

import (
	"strings"
	"testing"

	"github.com/airlock/airlock/cmd/airlock/internal/browsertest"
)

// TestBrowserViewStateNotes: state the page cannot render shows as a
// short note naming the field and its type, never the value the host
// sent, and goes once the state renders again.
func TestBrowserViewStateNotes(t *testing.T) {
	p := startSessions(t)
	b := browsertest.Start(t).First()
	_, host := openView(t, p, b, p.URL())
	notesHidden := `String(document.getElementById("state-notes").hidden)`
	b.WaitFor("no note for state that renders", notesHidden, "true")

	host.send("focusNode", map[string]any{"nodeId": 42}, 1)
	b.WaitFor("the note", has("#state-notes", "focusNode: nodeId must be a string, got a number"), "true")
	b.WaitFor("the note shown", notesHidden, "false")
	b.WaitFor("no focus", text("#focus"), "–")
	b.Screenshot("01-state-note")

	// A value is never echoed, nor read as HTML.
	hostile := `<img src=x id=pwned>` + strings.Repeat("x", 4000)
	host.send("focusNode", map[string]any{"nodeId": hostile}, 2)
	b.WaitFor("the unknown node's note", has("#state-notes", "focusNode: nodeId names no node of the projection"), "true")
	b.WaitFor("no value in the notes", has("#state-notes", "xxx"), "false")
	b.WaitFor("no markup from the host", `String(document.querySelectorAll("#pwned").length)`, "0")

	host.send("focusNode", map[string]any{"nodeId": "conv1"}, 3)
	b.WaitFor("the focus", attr(`#nodes button[data-node="conv1"]`, "aria-current"), "true")
	b.WaitFor("the note gone", notesHidden, "true")
}
