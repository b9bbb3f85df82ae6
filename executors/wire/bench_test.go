package wire

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
)

// The strict walk runs on every call and answer on every hop; these
// benchmarks measure the envelope parsers on typical and large frames.

var (
	benchCall = []byte(`{"v":1,"callId":"call_1234","tool":"read_notes","descriptorId":"notes",` +
		`"args":{"path":"projects/airlock/notes.md","limit":20},` +
		`"boundsEcho":{"timeoutMs":2000,"memoryMiB":64,"maxOutputBytes":1048576,"maxRequests":0,"allowedHosts":[],"roots":["notes"]}}`)
	benchAnswer = []byte(`{"v":1,"callId":"call_1234","ok":true,"observed":{"text":"` + strings.Repeat("lorem ipsum ", 40) +
		`","lines":[1,2,3,4,5],"meta":{"path":"projects/airlock/notes.md","bytes":480}},"budget":{"requestsUsed":0,"requestsLimit":0}}`)
	benchLargeAnswer = largeAnswer()
)

// largeAnswer is an answer whose observed holds 1,000 small objects.
func largeAnswer() []byte {
	var items []string
	for i := 0; i < 1000; i++ {
		items = append(items, fmt.Sprintf(`{"path":"notes/%d.md","line":%d,"text":"match number %d"}`, i, i, i))
	}
	return []byte(`{"v":1,"callId":"c","ok":true,"observed":{"matches":[` + strings.Join(items, ",") + `]}}`)
}

func BenchmarkParseCall(b *testing.B) {
	b.ReportAllocs()
	b.SetBytes(int64(len(benchCall)))
	for b.Loop() {
		if _, err := ParseCall(benchCall); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkParseAnswer(b *testing.B) {
	b.ReportAllocs()
	b.SetBytes(int64(len(benchAnswer)))
	for b.Loop() {
		if _, err := ParseAnswer(benchAnswer); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkParseAnswerLarge(b *testing.B) {
	b.ReportAllocs()
	b.SetBytes(int64(len(benchLargeAnswer)))
	for b.Loop() {
		if _, err := ParseAnswer(benchLargeAnswer); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkCompactMember(b *testing.B) {
	var env struct{ Observed json.RawMessage }
	_ = json.Unmarshal(benchLargeAnswer, &env)
	b.ReportAllocs()
	b.SetBytes(int64(len(env.Observed)))
	for b.Loop() {
		if _, err := CompactMember(env.Observed); err != nil {
			b.Fatal(err)
		}
	}
}
