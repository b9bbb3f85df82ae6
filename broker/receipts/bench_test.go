package receipts

import (
	"testing"
)

// BenchmarkAppend is one call's receipt under fsync batch: the record's
// JSON, the args HMAC, the lock, the checks and the write.
func BenchmarkAppend(b *testing.B) {
	l, err := Open(Options{Dir: b.TempDir()})
	if err != nil {
		b.Fatal(err)
	}
	defer l.Close()
	ms := 0.5
	b.ReportAllocs()
	for b.Loop() {
		r := Record{Kind: KindCall, Door: DoorV1, Executor: "local", Descriptor: "notes", Tool: "read_notes",
			CallID: "call_1", Outcome: "ok", DurationMs: &ms, ArgsHMAC: l.Args([]byte(`{"path":"welcome.md"}`))}
		if err := l.Append(r); err != nil {
			b.Fatal(err)
		}
	}
}
