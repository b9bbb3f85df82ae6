package jsclient_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"go.uber.org/goleak"

	"github.com/airlock/airlock/broker/contract"
	"github.com/airlock/airlock/executors/wire"
	"github.com/airlock/airlock/executors/wire/wiretest"
	"github.com/airlock/airlock/plugins"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// schemaBase is the $id prefix of every schema in schemas/. It is a name,
// not a location: .invalid never resolves (RATIONALE.md, "Why do the
// schemas' ids start https://airlock.invalid/schemas/?").
const schemaBase = "https://airlock.invalid/schemas/"

// verdictCase is one golden case judged twice: by the broker's own Go
// validator and by the JSON Schema at schema.
type verdictCase struct {
	name    string // family/file, e.g. "relay/session_mismatch"
	data    []byte // nil for a relay frame that has no body (binary, oversize)
	schema  string // schema location under schemaBase
	goErr   error  // the Go validator's refusal, nil when it accepts
	refusal *contract.Refusal
}

// codeOnly lists, once, the rules of the contract that JSON Schema cannot
// say, so the broker (and @airlock/client) implement them in code. The
// schemas hold every other rule: wherever the schema and the Go validator
// disagree on a golden case, the Go validator refused and one of these
// rules applies to the case. A rule that explains no golden case fails
// TestSchemasAgreeWithGo, so the list cannot outlive the rules
// (RATIONALE.md, "Why are some rules of the contract in code only?").
var codeOnly = map[string]struct {
	why     string
	applies func(c verdictCase) bool
}{
	"duplicate-keys": {
		"a schema judges a parsed value, in which a repeated key has already been dropped (PROTOCOL section 1.7)",
		func(c verdictCase) bool { return exactDuplicate(c.data) },
	},
	"case-folded-keys": {
		"keys equal under Unicode simple case folding are duplicates; a schema can name keys but cannot compare an object's keys with one another (PROTOCOL section 1.7)",
		func(c verdictCase) bool { return wiretest.FoldDuplicate(c.data) && !exactDuplicate(c.data) },
	},
	"nesting-depth": {
		"envelopes and channel frames nest at most wire.MaxDepth deep; args and observed are free-form objects, and a schema has no depth keyword",
		func(c verdictCase) bool { return wiretest.Depth(c.data) > wire.MaxDepth },
	},
	"integer-spelling": {
		"integers are written as digits only (1, not 1.0 or 1e0); a schema compares numbers by value, so const 1 and type integer accept 1.0",
		func(c verdictCase) bool { return integralNonInteger(c.data) },
	},
	"byte-bounds": {
		"bounds counted in bytes of UTF-8 or of decoded data (a hello's 1 KiB, a bearer's 256 bytes, a description's 4096 bytes, plugin.json's 1 MiB, a graph's 10 MiB, a bulk result's 16 MiB); maxLength counts characters",
		overByteBound,
	},
	"distinct-members": {
		"tool names within a descriptor and descriptor ids within a catalog are distinct; uniqueItems compares whole items, not one member of each",
		duplicateMember,
	},
	"host-grammar": {
		"an allowedHosts entry is an exact IPv4 or IPv6 address (net.ParseIP) or a DNS name of at most 253 bytes; the schema's pattern holds the form, not the address grammar or the total length",
		badHost,
	},
	"url-grammar": {
		"connectUrl, graphUrl and shareUrl must parse as URLs (net/url: host characters, port, escapes); the schema's pattern holds the scheme, the host and the absence of userinfo",
		func(c verdictCase) bool { return c.refusal != nil && c.refusal.Detail == contract.DetailURL },
	},
	"frame-kind": {
		"a binary frame, or one over 16 MiB, is refused before it is read; there is no JSON for a schema to judge",
		func(c verdictCase) bool { return c.data == nil },
	},
	"socket-session": {
		"workspaceSessionId must name the socket's own session, which only the broker knows",
		func(c verdictCase) bool { return c.refusal != nil && c.refusal.Code == contract.SessionMismatch },
	},
	"sender-view-id": {
		"a viewId a view puts in its request must be its own socket's, which only the broker knows",
		func(c verdictCase) bool { return c.refusal != nil && c.refusal.Detail == contract.DetailViewID },
	},
	"config-name-case": {
		"a plugin's config names may not differ only in ASCII case (API_KEY and api_key); uniqueItems compares strings exactly",
		configCaseDuplicate,
	},
	"session-capability": {
		"sourceEdit* needs a session minted with canProposeSourceEdits and a broker that allows proposals",
		func(c verdictCase) bool { return c.refusal != nil && c.refusal.Detail == contract.DetailCapability },
	},
}

// TestSchemasAgreeWithGo runs every golden case of testdata (wire/,
// channel/, plugin/, relay/) through the broker's Go validator and through
// the JSON Schema, and fails on any disagreement in verdict that no
// code-only rule explains, and on a code-only rule that explains nothing.
// The schema is never allowed to refuse what the broker accepts.
func TestSchemasAgreeWithGo(t *testing.T) {
	schemas := compileSchemas(t)
	explained := map[string][]string{}
	cases := goldenCases(t)
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			rules, err := explain(c, judge(schemas, c))
			if err != nil {
				t.Fatal(err)
			}
			for _, r := range rules {
				explained[r] = append(explained[r], c.name)
			}
			if len(rules) > 0 {
				t.Logf("code-only: %s", strings.Join(rules, ", "))
			}
		})
	}
	for name := range codeOnly {
		if len(explained[name]) == 0 {
			t.Errorf("code-only rule %q explains no golden case: give it one or take it off the list", name)
		}
	}
	if len(cases) < 250 {
		t.Errorf("only %d golden cases were read", len(cases))
	}
}

// explain compares the broker's verdict on c with the schema's
// (schemaErr): it returns no rules when they agree, the code-only rules
// that apply when only the broker refuses, and an error when the schema
// refuses what the broker accepts or no rule applies.
func explain(c verdictCase, schemaErr error) ([]string, error) {
	goOK := c.goErr == nil && c.refusal == nil
	switch {
	case goOK == (schemaErr == nil):
		return nil, nil
	case goOK:
		return nil, fmt.Errorf("the schema refuses what the broker accepts: %v", schemaErr)
	}
	var rules []string
	for name, r := range codeOnly {
		if r.applies(c) {
			rules = append(rules, name)
		}
	}
	if len(rules) == 0 {
		return nil, fmt.Errorf("the broker refuses (%v%v) what the schema accepts, and no code-only rule applies", c.goErr, c.refusal)
	}
	sort.Strings(rules)
	return rules, nil
}

// judge is the schema's verdict: the input must be one JSON text (RFC
// 8259: UTF-8, one value) and valid against the schema. A frame without a
// body has nothing to refuse.
func judge(schemas map[string]*jsonschema.Schema, c verdictCase) error {
	if c.data == nil {
		return nil
	}
	if !utf8.Valid(c.data) {
		return errors.New("not UTF-8")
	}
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader(c.data))
	if err != nil {
		return err
	}
	return schemas[c.schema].Validate(v)
}

// compileSchemas compiles every location the golden cases use, with every
// file of schemas/ added under its $id, so no reference can reach the
// network.
func compileSchemas(t testing.TB) map[string]*jsonschema.Schema {
	t.Helper()
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	files, err := filepath.Glob(filepath.Join("schemas", "*.schema.json"))
	if err != nil || len(files) != 6 {
		t.Fatalf("schema files %v: %v", files, err)
	}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(data))
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		id, _ := doc.(map[string]any)["$id"].(string)
		if want := schemaBase + filepath.Base(f); id != want {
			t.Fatalf("%s: $id %q, want %q", f, id, want)
		}
		if err := c.AddResource(id, doc); err != nil {
			t.Fatal(err)
		}
	}
	out := map[string]*jsonschema.Schema{}
	for _, loc := range []string{
		"call.schema.json", "answer.schema.json", "descriptor.schema.json", "plugin.schema.json",
		"channel.schema.json", "channel.schema.json#/$defs/ChannelHello", "channel.schema.json#/$defs/ChannelCatalog",
		"local-ws.schema.json", "local-ws.schema.json#/$defs/Hello",
		"local-ws.schema.json#/$defs/FromHost", "local-ws.schema.json#/$defs/FromView",
		"local-ws.schema.json#/$defs/ToHost", "local-ws.schema.json#/$defs/ToView",
	} {
		s, err := c.Compile(schemaBase + loc)
		if err != nil {
			t.Fatalf("compile %s: %v", loc, err)
		}
		out[loc] = s
	}
	return out
}

// family is a golden folder of JSON documents, the schema that judges
// them and the Go validator the broker uses for them.
type family struct {
	dir, schema string
	parse       func([]byte) error
}

var families = []family{
	{"wire/call", "call.schema.json", func(b []byte) error { _, err := wire.ParseCall(b); return err }},
	{"wire/answer", "answer.schema.json", func(b []byte) error { _, err := wire.ParseAnswer(b); return err }},
	{"channel/hello", "channel.schema.json#/$defs/ChannelHello", func(b []byte) error { _, err := wire.ParseHello(b); return err }},
	{"channel/catalog", "channel.schema.json#/$defs/ChannelCatalog", func(b []byte) error { _, err := wire.ParseCatalog(b); return err }},
	{"plugin", "plugin.schema.json", func(b []byte) error { _, err := plugins.ParseManifest(b); return err }},
}

// goldenCases reads every golden folder and asks the Go validator the
// broker uses for each: wire.ParseCall and ParseAnswer (PROTOCOL section
// 5), wire.ParseHello and ParseCatalog (section 6), plugins.ParseManifest
// (section 8) and contract.Validate (section 4).
func goldenCases(t testing.TB) []verdictCase {
	var out []verdictCase
	for _, f := range families {
		for name, g := range wiretest.Golden(t, f.dir) {
			c := verdictCase{name: f.dir + "/" + name, data: []byte(g.In), schema: f.schema, goErr: f.parse([]byte(g.In))}
			if (c.goErr == nil) != (g.Want == "ok") {
				t.Fatalf("%s: the Go validator says %v, the golden file %s", c.name, c.goErr, g.Want)
			}
			out = append(out, c)
		}
	}
	return append(out, relayCases(t)...)
}

// relayCases reads testdata/relay (its README has the format): the frame,
// and the socket it arrives on, which picks the schema: the first frame
// is $defs/Hello, later ones $defs/FromHost or $defs/FromView.
func relayCases(t testing.TB) []verdictCase {
	files, err := filepath.Glob(filepath.Join("..", "..", "testdata", "relay", "*.txt"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no relay golden files: %v", err)
	}
	var out []verdictCase
	for _, path := range files {
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		head, body, ok := strings.Cut(string(data), "\n---\n")
		if !ok {
			t.Fatalf("%s: no --- line", path)
		}
		h := map[string]string{}
		for _, line := range strings.Split(head, "\n") {
			k, v, _ := strings.Cut(line, ": ")
			h[k] = strings.TrimSpace(v)
		}
		ctx := contract.Context{Role: contract.View, SessionID: "ws_test", ViewID: "v_me",
			Handshake: h["handshake"] == "true", CanPropose: h["propose"] == "true"}
		schema := "local-ws.schema.json#/$defs/FromView"
		if h["role"] == "host" {
			ctx.Role, ctx.ViewID, schema = contract.Host, "", "local-ws.schema.json#/$defs/FromHost"
		}
		if ctx.Handshake {
			schema = "local-ws.schema.json#/$defs/Hello"
		}
		frame := contract.Frame{Binary: h["kind"] == "binary", Oversize: h["kind"] == "oversize"}
		if h["kind"] == "text" {
			frame.Data = []byte(body)
		}
		_, r := contract.Validate(frame, ctx)
		c := verdictCase{name: "relay/" + strings.TrimSuffix(filepath.Base(path), ".txt"), data: frame.Data, schema: schema, refusal: r}
		if (r == nil) != (h["want"] == "OK") {
			t.Fatalf("%s: contract.Validate says %v, the golden file %s", c.name, r, h["want"])
		}
		out = append(out, c)
	}
	return out
}

// exactDuplicate reports whether some object in data holds one key twice,
// byte for byte after unescaping.
func exactDuplicate(data []byte) bool {
	dec := json.NewDecoder(bytes.NewReader(data))
	var stack []map[string]bool // keys of each open container; nil for arrays
	expectKey := false
	for {
		tok, err := dec.Token()
		if err != nil {
			return false
		}
		if k, ok := tok.(string); ok && expectKey {
			top := stack[len(stack)-1]
			if top[k] {
				return true
			}
			top[k] = true
			expectKey = false
			continue
		}
		switch tok {
		case json.Delim('{'):
			stack = append(stack, map[string]bool{})
		case json.Delim('['):
			stack = append(stack, nil)
		case json.Delim('}'), json.Delim(']'):
			stack = stack[:len(stack)-1]
		}
		expectKey = len(stack) > 0 && stack[len(stack)-1] != nil
	}
}

// integralNonInteger reports whether data holds a number with an integral
// value written with a fraction or an exponent (1.0, 1e0).
func integralNonInteger(data []byte) bool {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	for {
		tok, err := dec.Token()
		if err != nil {
			return false
		}
		n, ok := tok.(json.Number)
		if !ok || !strings.ContainsAny(string(n), ".eE") {
			continue
		}
		if f, err := n.Float64(); err == nil && f == float64(int64(f)) {
			return true
		}
	}
}

// decoded is data as a generic value, or nil when it is not JSON.
func decoded(data []byte) any {
	var v any
	if json.Unmarshal(data, &v) != nil {
		return nil
	}
	return v
}

// eachObject calls fn on every object in v, at any depth.
func eachObject(v any, fn func(map[string]any)) {
	switch x := v.(type) {
	case map[string]any:
		fn(x)
		for _, e := range x {
			eachObject(e, fn)
		}
	case []any:
		for _, e := range x {
			eachObject(e, fn)
		}
	}
}

// maxManifestBytes is plugins' bound on plugin.json (PROTOCOL section 8.1).
const maxManifestBytes = 1 << 20

func overByteBound(c verdictCase) bool {
	v := decoded(c.data)
	top, _ := v.(map[string]any)
	switch {
	case strings.HasPrefix(c.name, "channel/hello/"):
		bearer, _ := top["bearer"].(string)
		return len(c.data) > wire.MaxHelloBytes || len(bearer) > wire.MaxBearerLen
	case strings.HasPrefix(c.name, "plugin/") && len(c.data) > maxManifestBytes:
		return true
	case c.refusal != nil:
		return c.refusal.Detail == contract.DetailGraphTooLarge || c.refusal.Detail == contract.DetailResultTooLarge
	}
	over := false
	eachObject(v, func(o map[string]any) {
		if tools, ok := o["tools"].([]any); ok {
			for _, tool := range tools {
				m, _ := tool.(map[string]any)
				d, _ := m["description"].(string)
				over = over || len(d) > wire.MaxDescriptionLen
			}
		}
	})
	return over
}

func duplicateMember(c verdictCase) bool {
	dup := false
	distinct := func(list any, key string) {
		items, _ := list.([]any)
		seen := map[string]bool{}
		for _, it := range items {
			m, _ := it.(map[string]any)
			if s, ok := m[key].(string); ok {
				dup = dup || seen[s]
				seen[s] = true
			}
		}
	}
	eachObject(decoded(c.data), func(o map[string]any) {
		distinct(o["tools"], "name")
		distinct(o["descriptors"], "descriptorId")
	})
	return dup
}

func badHost(c verdictCase) bool {
	bad := false
	eachObject(decoded(c.data), func(o map[string]any) {
		hosts, _ := o["allowedHosts"].([]any)
		for _, h := range hosts {
			s, _ := h.(string)
			bad = bad || !wire.ValidHost(s)
		}
	})
	return bad
}

// TestSchemasMirrorContract: local-ws.schema.json has a named message and
// payload definition for every type of contract.Types, and its FromHost,
// FromView and ordered (hostSequence required) sets are the contract's.
func TestSchemasMirrorContract(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("schemas", "local-ws.schema.json"))
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Defs map[string]struct {
			Properties map[string]struct {
				Const any `json:"const"`
			} `json:"properties"`
			Required []string `json:"required"`
			AnyOf    []struct {
				Ref string `json:"$ref"`
			} `json:"anyOf"`
		} `json:"$defs"`
	}
	if err := json.Unmarshal(data, &doc); err != nil {
		t.Fatal(err)
	}
	typeOf := func(ref string) string {
		d := doc.Defs[strings.TrimPrefix(ref, "#/$defs/")]
		s, _ := d.Properties["type"].Const.(string)
		return s
	}
	for _, typ := range contract.Types() {
		name := strings.ToUpper(typ[:1]) + typ[1:]
		msg := name
		if typ == "error" {
			msg = "ErrorMessage"
		}
		d, ok := doc.Defs[msg]
		if !ok || typeOf("#/$defs/"+msg) != typ {
			t.Errorf("no $defs/%s for type %s", msg, typ)
			continue
		}
		if _, ok := doc.Defs[name+"Payload"]; !ok {
			t.Errorf("no $defs/%sPayload", name)
		}
		spec, _ := contract.Lookup(typ)
		if ordered := contains(d.Required, "hostSequence"); ordered != spec.Ordered {
			t.Errorf("%s: hostSequence required %v, contract ordered %v", typ, ordered, spec.Ordered)
		}
	}
	for _, dir := range []struct {
		def  string
		role contract.Role
	}{{"FromHost", contract.Host}, {"FromView", contract.View}} {
		var got []string
		for _, r := range doc.Defs[dir.def].AnyOf {
			got = append(got, typeOf(r.Ref))
		}
		var want []string
		for _, typ := range contract.Types() {
			if s, _ := contract.Lookup(typ); s.From&dir.role != 0 && typ != "hello" {
				want = append(want, typ)
			}
		}
		sort.Strings(got)
		sort.Strings(want)
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("$defs/%s sends %v, the contract %v", dir.def, got, want)
		}
	}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// FuzzSchemasAgreeWithGo holds arbitrary inputs, seeded from the golden
// files, to the parity rule of TestSchemasAgreeWithGo for the envelopes,
// the channel frames and plugin.json: the schema never refuses what the
// broker accepts, and when it accepts what the broker refuses, a
// code-only rule applies.
func FuzzSchemasAgreeWithGo(f *testing.F) {
	schemas := compileSchemas(f)
	for i, fam := range families {
		for _, g := range wiretest.Golden(f, fam.dir) {
			f.Add(uint8(i), []byte(g.In))
		}
	}
	f.Fuzz(func(t *testing.T, which uint8, data []byte) {
		fam := families[int(which)%len(families)]
		c := verdictCase{name: fam.dir + "/fuzz", data: data, schema: fam.schema, goErr: fam.parse(data)}
		if _, err := explain(c, judge(schemas, c)); err != nil {
			t.Fatal(err)
		}
	})
}

// FuzzRelaySchemaAgreesWithGo is FuzzSchemasAgreeWithGo for /local/ws
// frames after the handshake, from a view and from a host of a session
// that may propose source edits.
func FuzzRelaySchemaAgreesWithGo(f *testing.F) {
	schemas := compileSchemas(f)
	for _, c := range relayCases(f) {
		if c.data != nil {
			f.Add(strings.HasSuffix(c.schema, "FromHost"), c.data)
		}
	}
	f.Fuzz(func(t *testing.T, host bool, data []byte) {
		ctx := contract.Context{Role: contract.View, SessionID: "ws_test", ViewID: "v_me", CanPropose: true}
		schema := "local-ws.schema.json#/$defs/FromView"
		if host {
			ctx.Role, ctx.ViewID, schema = contract.Host, "", "local-ws.schema.json#/$defs/FromHost"
		}
		_, r := contract.Validate(contract.Frame{Data: data}, ctx)
		c := verdictCase{name: "relay/fuzz", data: data, schema: schema, refusal: r}
		if _, err := explain(c, judge(schemas, c)); err != nil {
			t.Fatal(err)
		}
	})
}

// TestSchemaLimitsMirrorGo: the numeric limits the schemas state are the
// broker's constants, which golden cases rarely reach.
func TestSchemaLimitsMirrorGo(t *testing.T) {
	read := func(file string) any {
		data, err := os.ReadFile(filepath.Join("schemas", file))
		if err != nil {
			t.Fatal(err)
		}
		dec := json.NewDecoder(bytes.NewReader(data))
		dec.UseNumber()
		var v any
		if err := dec.Decode(&v); err != nil {
			t.Fatal(err)
		}
		return v
	}
	docs := map[string]any{}
	for _, f := range []string{"call", "answer", "descriptor", "channel", "local-ws"} {
		docs[f] = read(f + ".schema.json")
	}
	at := func(file, path string) string {
		v := docs[file]
		for _, k := range strings.Split(path, "/") {
			m, _ := v.(map[string]any)
			v = m[k]
		}
		n, ok := v.(json.Number)
		if !ok {
			t.Fatalf("%s#/%s is not a number", file, path)
		}
		return n.String()
	}
	for _, c := range []struct {
		file, path string
		want       int64
	}{
		{"descriptor", "$defs/Bounds/properties/timeoutMs/maximum", wire.MaxTimeoutMs},
		{"descriptor", "$defs/Bounds/properties/memoryMiB/maximum", wire.MaxMemoryMiB},
		{"descriptor", "$defs/Bounds/properties/maxOutputBytes/maximum", wire.MaxOutputBytes},
		{"descriptor", "$defs/Bounds/properties/maxRequests/maximum", wire.MaxRequests},
		{"descriptor", "$defs/Tools/maxItems", wire.MaxTools},
		{"descriptor", "$defs/Tool/properties/description/maxLength", wire.MaxDescriptionLen},
		{"channel", "$defs/ChannelCatalog/properties/descriptors/maxItems", wire.MaxCatalogDescriptors},
		{"call", "$defs/Identifier/maxLength", 128},
		{"answer", "$defs/Count/maximum", 9999999999999999},
		{"call", "$defs/Version/const", wire.Version},
		{"local-ws", "$defs/ProtocolVersion/const", contract.ProtocolVersion},
	} {
		if got := at(c.file, c.path); got != strconv.FormatInt(c.want, 10) {
			t.Errorf("%s#/%s = %v, the broker's %v", c.file, c.path, got, c.want)
		}
	}
}

// configCaseDuplicate reports a plugin.json whose config names repeat
// under ASCII case folding but not exactly.
func configCaseDuplicate(c verdictCase) bool {
	var m struct {
		Config []string `json:"config"`
	}
	if json.Unmarshal(c.data, &m) != nil {
		return false
	}
	seen := map[string]string{}
	for _, n := range m.Config {
		if o, ok := seen[strings.ToLower(n)]; ok && o != n {
			return true
		}
		seen[strings.ToLower(n)] = n
	}
	return false
}
