package contract

import (
	"strings"
	"testing"
)

// BenchmarkValidate measures the contract on a typical ordered host frame
// (every frame passes it once, walked in full for duplicate keys).
func BenchmarkValidate(b *testing.B) {
	frame := []byte(`{"protocolVersion":1,"workspaceSessionId":"ws_test","type":"projection","hostSequence":17,` +
		`"payload":{"nodes":[` + strings.Repeat(`{"id":"n1","label":"conv2d","shape":[1,64,56,56],"attrs":{"kernel":3,"stride":1}},`, 50) +
		`{"id":"last"}],"edges":[]}}`)
	c := Context{Role: Host, SessionID: testSession}
	b.ReportAllocs()
	b.SetBytes(int64(len(frame)))
	for b.Loop() {
		if _, r := Validate(Frame{Data: frame}, c); r != nil {
			b.Fatal(r)
		}
	}
}
