package wire

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"go.uber.org/goleak"

	"github.com/airlock/airlock/executors/wire/wiretest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// golden reads testdata/<dir>/*.txt (dir like "wire/call") as
// wiretest.Golden does: the frame, a line "----", then the expected rule
// id or "ok".
func golden(t testing.TB, dir string) map[string][2]string {
	cases := map[string][2]string{}
	for name, c := range wiretest.Golden(t, dir) {
		cases[name] = [2]string{c.In, c.Want}
	}
	return cases
}

func outcome(err error) string {
	if err == nil {
		return "ok"
	}
	var e *Error
	if !asError(err, &e) {
		return "untyped: " + err.Error()
	}
	return string(e.Rule)
}

func asError(err error, target **Error) bool {
	e, ok := err.(*Error)
	*target = e
	return ok
}

func TestGoldenCalls(t *testing.T) {
	for name, c := range golden(t, "wire/call") {
		t.Run(name, func(t *testing.T) {
			_, err := ParseCall([]byte(c[0]))
			if got := outcome(err); got != c[1] {
				t.Errorf("got %s (%v), want %s", got, err, c[1])
			}
		})
	}
}

func TestGoldenAnswers(t *testing.T) {
	for name, c := range golden(t, "wire/answer") {
		t.Run(name, func(t *testing.T) {
			_, err := ParseAnswer([]byte(c[0]))
			if got := outcome(err); got != c[1] {
				t.Errorf("got %s (%v), want %s", got, err, c[1])
			}
		})
	}
}

func TestCallRoundTrip(t *testing.T) {
	in := `{ "boundsEcho": {"b":2, "a":1}, "args": { "path" : "x.md" }, "descriptorId":"notes","tool":"read_notes","callId":"c1","v":1}`
	c, err := ParseCall([]byte(in))
	if err != nil {
		t.Fatal(err)
	}
	out, _ := json.Marshal(c)
	want := `{"v":1,"callId":"c1","tool":"read_notes","descriptorId":"notes","args":{"path":"x.md"},"boundsEcho":{"b":2,"a":1}}`
	if string(out) != want {
		t.Errorf("re-encoded\n got %s\nwant %s", out, want)
	}
	if err := c.Validate(); err != nil {
		t.Errorf("Validate: %v", err)
	}
	c.CallID = ""
	if err := c.Validate(); outcome(err) != "malformed" {
		t.Errorf("Validate with empty callId: %v", err)
	}
}

func TestAnswerShapes(t *testing.T) {
	b := &Budget{RequestsUsed: 1, RequestsLimit: 2}
	cases := map[string]struct {
		a    Answer
		want string
	}{
		"observed":        {Observed("c", json.RawMessage(`{"x":1}`), nil), `{"v":1,"callId":"c","ok":true,"observed":{"x":1}}`},
		"observed-budget": {Observed("c", json.RawMessage(`{}`), b), `{"v":1,"callId":"c","ok":true,"observed":{},"budget":{"requestsUsed":1,"requestsLimit":2}}`},
		"refused":         {Refuse("c", BudgetExhausted, b), `{"v":1,"callId":"c","ok":false,"refused":"budget-exhausted","why":"the tool made more fetches than bounds.maxRequests","budget":{"requestsUsed":1,"requestsLimit":2}}`},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			got, err := json.Marshal(c.a)
			if err != nil || string(got) != c.want {
				t.Fatalf("got %s (%v), want %s", got, err, c.want)
			}
			back, err := ParseAnswer(got)
			if err != nil || !reflect.DeepEqual(back, c.a) {
				t.Errorf("parse back: %+v (%v), want %+v", back, err, c.a)
			}
		})
	}
}

func TestRefuseBody(t *testing.T) {
	cases := map[string]struct{ body, id, rule string }{
		"readable id":   {`{"v":1,"callId":"abc","grant":1}`, "abc", "unknown-field"},
		"unreadable id": {`{"v":1,"callId":7}`, UnreadableCallID, "malformed"},
		"not json":      {`{`, UnreadableCallID, "malformed"},
		"bad version":   {`{"v":9,"callId":"z"}`, "z", "version-mismatch"},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			_, err := ParseCall([]byte(c.body))
			a := RefuseBody([]byte(c.body), err)
			if a.CallID != c.id || string(a.Refused) != c.rule || a.OK {
				t.Errorf("got %+v", a)
			}
			data, _ := json.Marshal(a)
			if _, err := ParseAnswer(data); err != nil {
				t.Errorf("the refusal is not itself a valid answer: %v", err)
			}
		})
	}
}

func TestRulesAreKnownAndHaveText(t *testing.T) {
	if len(Rules) != 24 {
		t.Errorf("vocabulary has %d rules, PROTOCOL lists 24", len(Rules))
	}
	for _, r := range Rules {
		if !r.Known() || r.Why() == "refused" || r.Why() == "" {
			t.Errorf("rule %s lacks text or is unknown", r)
		}
	}
	if Rule("allow").Known() {
		t.Error("an invented rule is known")
	}
}

func TestBoundsEcho(t *testing.T) {
	b := Bounds{TimeoutMs: 2000, MemoryMiB: 64, MaxOutputBytes: 1048576, Roots: []string{"notes"}}
	check := b.EchoCheck()
	cases := map[string]struct {
		echo string
		want bool
	}{
		"exact":          {`{"timeoutMs":2000,"memoryMiB":64,"maxOutputBytes":1048576,"maxRequests":0,"allowedHosts":[],"roots":["notes"]}`, true},
		"canonical":      {`{"allowedHosts":[],"maxOutputBytes":1048576,"maxRequests":0,"memoryMiB":64,"roots":["notes"],"timeoutMs":2000}`, true},
		"reordered":      {`{"roots":["notes"],"allowedHosts":[],"maxRequests":0,"maxOutputBytes":1048576,"memoryMiB":64,"timeoutMs":2000}`, true},
		"float form":     {`{"timeoutMs":2000.0,"memoryMiB":64,"maxOutputBytes":1.048576e6,"maxRequests":0,"allowedHosts":[],"roots":["notes"]}`, true},
		"raised timeout": {`{"timeoutMs":3000,"memoryMiB":64,"maxOutputBytes":1048576,"maxRequests":0,"allowedHosts":[],"roots":["notes"]}`, false},
		"missing key":    {`{"timeoutMs":2000,"memoryMiB":64,"maxOutputBytes":1048576,"maxRequests":0,"roots":["notes"]}`, false},
		"null hosts":     {`{"timeoutMs":2000,"memoryMiB":64,"maxOutputBytes":1048576,"maxRequests":0,"allowedHosts":null,"roots":["notes"]}`, false},
		"extra key":      {`{"timeoutMs":2000,"memoryMiB":64,"maxOutputBytes":1048576,"maxRequests":0,"allowedHosts":[],"roots":["notes"],"x":1}`, false},
		"empty":          {`{}`, false},
	}
	for name, c := range cases {
		if got := check.Matches(json.RawMessage(c.echo)); got != c.want {
			t.Errorf("%s: got %v, want %v", name, got, c.want)
		}
	}
}

func TestValidHost(t *testing.T) {
	good := []string{"example.com", "api.example.com:8443", "127.0.0.1", "127.0.0.1:9000", "[::1]:80", "[2001:db8::1]", "a-b.c0"}
	bad := []string{"", "Example.com", "*.example.com", "example.com:0", "example.com:65536", "example.com:08", "http://example.com", "exa mple.com", "::1", "example.com/", "-a.com", "a..b", "user@example.com"}
	for _, h := range good {
		if !ValidHost(h) {
			t.Errorf("%q refused", h)
		}
	}
	for _, h := range bad {
		if ValidHost(h) {
			t.Errorf("%q accepted", h)
		}
	}
}

func TestDescriptorValidate(t *testing.T) {
	base := func() Descriptor {
		return Descriptor{
			DescriptorID: "notes",
			Tools:        []Tool{{Name: "read_notes", InputSchema: json.RawMessage(`{"type":"object"}`)}},
			Bounds:       Bounds{TimeoutMs: 1, MemoryMiB: 1, MaxOutputBytes: 1},
		}
	}
	if d := base(); d.Validate() != nil {
		t.Fatalf("base descriptor refused: %v", d.Validate())
	}
	typed := base()
	typed.Tools[0].OutputSchema = json.RawMessage(`{"type":"object","properties":{"n":{"type":"integer"}}}`)
	if err := typed.Validate(); err != nil {
		t.Fatalf("an outputSchema of type object refused: %v", err)
	}
	breakers := map[string]func(*Descriptor){
		"id upper":        func(d *Descriptor) { d.DescriptorID = "Notes" },
		"id path":         func(d *Descriptor) { d.DescriptorID = "../notes" },
		"no tools":        func(d *Descriptor) { d.Tools = nil },
		"dup tool":        func(d *Descriptor) { d.Tools = append(d.Tools, d.Tools[0]) },
		"bad tool name":   func(d *Descriptor) { d.Tools[0].Name = "read notes" },
		"schema not obj":  func(d *Descriptor) { d.Tools[0].InputSchema = json.RawMessage(`true`) },
		"output not obj":  func(d *Descriptor) { d.Tools[0].OutputSchema = json.RawMessage(`true`) },
		"output null":     func(d *Descriptor) { d.Tools[0].OutputSchema = json.RawMessage(`null`) },
		"output untyped":  func(d *Descriptor) { d.Tools[0].OutputSchema = json.RawMessage(`{"properties":{}}`) },
		"output array":    func(d *Descriptor) { d.Tools[0].OutputSchema = json.RawMessage(`{"type":"array"}`) },
		"output types":    func(d *Descriptor) { d.Tools[0].OutputSchema = json.RawMessage(`{"type":["object","null"]}`) },
		"timeout zero":    func(d *Descriptor) { d.Bounds.TimeoutMs = 0 },
		"memory huge":     func(d *Descriptor) { d.Bounds.MemoryMiB = MaxMemoryMiB + 1 },
		"output zero":     func(d *Descriptor) { d.Bounds.MaxOutputBytes = 0 },
		"requests neg":    func(d *Descriptor) { d.Bounds.MaxRequests = -1 },
		"host wildcard":   func(d *Descriptor) { d.Bounds.AllowedHosts = []string{"*.x.com"} },
		"host dup":        func(d *Descriptor) { d.Bounds.AllowedHosts = []string{"x.com", "x.com"} },
		"root bad":        func(d *Descriptor) { d.Bounds.Roots = []string{"../etc"} },
		"root dup":        func(d *Descriptor) { d.Bounds.Roots = []string{"a", "a"} },
		"description big": func(d *Descriptor) { d.Tools[0].Description = strings.Repeat("x", MaxDescriptionLen+1) },
	}
	for name, brk := range breakers {
		d := base()
		brk(&d)
		if d.Validate() == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

func TestDecodeStrict(t *testing.T) {
	var v struct {
		A int `json:"a"`
	}
	if err := DecodeStrict([]byte(`{"a":1}`), &v); err != nil || v.A != 1 {
		t.Fatalf("got %v %+v", err, v)
	}
	for in, rule := range map[string]Rule{`{"a":1,"b":2}`: UnknownField, `{"a":"x"}`: Malformed, `{"a":1,"a":2}`: Malformed, `{"a":1} 1`: Malformed} {
		if err := DecodeStrict([]byte(in), &v); RuleOf(err) != rule {
			t.Errorf("%s: got %v, want %s", in, err, rule)
		}
	}
}

// FuzzParseCall: never panics, and never accepts an envelope that
// re-encodes differently: what it accepts encodes (CallFrame, as the
// broker sends it) to bytes that parse back to the same call, and encode
// again to the same bytes.
func FuzzParseCall(f *testing.F) {
	for _, c := range golden(f, "wire/call") {
		f.Add([]byte(c[0]))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := ParseCall(data)
		if err != nil {
			if RuleOf(err) == ExecThrew {
				t.Fatalf("untyped error %v", err)
			}
			return
		}
		checkAccepted(t, data, c.CallID, c.Tool, c.DescriptorID)
		enc := CallFrame(c)
		back, err := ParseCall(enc)
		if err != nil {
			t.Fatalf("re-encoded call refused: %v\n%s", err, enc)
		}
		if !reflect.DeepEqual(c, back) {
			t.Fatalf("re-encoded call differs:\n%+v\n%+v", c, back)
		}
		enc2 := CallFrame(back)
		if !bytes.Equal(enc, enc2) {
			t.Fatalf("encoding is not stable:\n%s\n%s", enc, enc2)
		}
	})
}

// FuzzParseAnswer holds answers to the same property.
func FuzzParseAnswer(f *testing.F) {
	for _, c := range golden(f, "wire/answer") {
		f.Add([]byte(c[0]))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		a, err := ParseAnswer(data)
		if err != nil {
			if RuleOf(err) == ExecThrew {
				t.Fatalf("untyped error %v", err)
			}
			return
		}
		checkAccepted(t, data, a.CallID)
		enc := AnswerFrame(a)
		back, err := ParseAnswer(enc)
		if err != nil {
			t.Fatalf("re-encoded answer refused: %v\n%s", err, enc)
		}
		if !reflect.DeepEqual(a, back) {
			t.Fatalf("re-encoded answer differs:\n%+v\n%+v", a, back)
		}
	})
}

// checkAccepted holds an accepted envelope to PROTOCOL section 5 with
// oracles that do not use the parser's code: no two keys equal under
// strings.EqualFold in any object, and no identifier holding a control,
// bidi-override or line-separator character.
func checkAccepted(t *testing.T, data []byte, ids ...string) {
	t.Helper()
	if wiretest.FoldDuplicate(data) {
		t.Fatalf("accepted a case-folded duplicate key: %q", data)
	}
	for _, id := range ids {
		if i := strings.IndexFunc(id, forbiddenInID); i >= 0 {
			t.Fatalf("accepted identifier %+q", id)
		}
	}
}

// forbiddenInID is PROTOCOL section 1.8's list, written out again.
func forbiddenInID(r rune) bool {
	return r < 0x20 || (r >= 0x7f && r <= 0x9f) || (r >= 0x202a && r <= 0x202e) ||
		(r >= 0x2066 && r <= 0x2069) || r == 0x2028 || r == 0x2029 ||
		r == 0x200e || r == 0x200f || r == 0x061c || r == 0xfffd
}
