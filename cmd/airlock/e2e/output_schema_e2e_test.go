package e2e

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/airlock/airlock/broker/mcp/mcptest"
	"github.com/airlock/airlock/cmd/airlock/internal/exitcode"
	"github.com/airlock/airlock/executors/testkit"
	"github.com/airlock/airlock/executors/wire"
	"github.com/airlock/airlock/plugins"
)

// typedOutput is the outputSchema of the typed plugin's echo: echo
// answers its args, so the args decide whether the output conforms.
const typedOutput = `{"type":"object","properties":{"n":{"type":"integer"}},"required":["n"]}`

// outputSchemaPlugins is a plugins folder with typed (echo, declaring
// typedOutput) and outbomb (a tool whose outputSchema expands past the
// node bound), and the module hash of both.
func outputSchemaPlugins(t *testing.T) (dir, sum string, b wire.Bounds) {
	t.Helper()
	dir = t.TempDir()
	b = wire.Bounds{TimeoutMs: 60000, MemoryMiB: 32, MaxOutputBytes: 4096, AllowedHosts: []string{}, Roots: []string{}}
	module := testkit.Fixture(t, "guest.wasm")
	typed := fxManifestOf("typed", b, "echo")
	typed.Tools[0].OutputSchema = json.RawMessage(typedOutput)
	must(t, plugins.WriteFolder(dir, typed, module))
	bomb := fxManifestOf("outbomb", b, "bigout")
	bomb.Tools[0].OutputSchema = json.RawMessage(strings.Replace(testkit.SchemaBomb(20), `{`, `{"type":"object",`, 1))
	must(t, plugins.WriteFolder(dir, bomb, module))
	return dir, plugins.HashModule(module), b
}

// TestOutputSchemaRefusesTooComplex: an outputSchema is admitted under
// the inputSchema's bounds; one over them refuses the plugin by name, its
// reason and which schema failed, in `airlock tools`.
func TestOutputSchemaRefusesTooComplex(t *testing.T) {
	t.Parallel()
	dir, _, _ := outputSchemaPlugins(t)
	code, out, _ := runCLI(t, nil, "tools", "--plugins", dir, "--no-builtin", "--data", t.TempDir())
	var line string
	for _, l := range scanLines(out) {
		if strings.HasPrefix(l, "outbomb") {
			line = l
		}
	}
	if code != exitcode.Refused || !strings.Contains(line, "schema-too-complex") ||
		!strings.Contains(line, "the outputSchema of tool bigout") {
		t.Errorf("tools --plugins: exit %d\n%s", code, out)
	}
	if !strings.Contains(out, "typed") {
		t.Errorf("the typed plugin is not admitted:\n%s", out)
	}
}

// TestOutputSchemaOnV1Calls: POST /v1/calls returns an observation that
// satisfies the tool's outputSchema and refuses one that does not,
// output-invalid, naming the pointer and keyword but never the value;
// GET /v1/tools lists the schema and the module's hash; the refusal is
// counted under its rule id.
func TestOutputSchemaOnV1Calls(t *testing.T) {
	t.Parallel()
	dir, sum, b := outputSchemaPlugins(t)
	p := startServe(t, procOptions{
		Args: []string{"--plugins", dir, "--no-builtin"}, Env: tokenEnv(), Secrets: []string{testToken},
	})
	w := &fixtureWorld{p: p}
	if a := postCall(t, p, w.body("typed", b, "echo", `{"n":7}`)); !a.OK || string(a.Observed) != `{"n":7}` {
		t.Errorf("a conforming observation: %+v", a)
	}
	a := postCall(t, p, w.body("typed", b, "echo", `{"n":"value-not-to-repeat"}`))
	if a.OK || a.Refused != wire.OutputInvalid || a.Why != "/n: type" || a.Budget == nil {
		t.Errorf("a non-conforming observation: %+v", a)
	}
	a = postCall(t, p, w.body("typed", b, "echo", `{}`))
	if a.Refused != wire.OutputInvalid || a.Why != "/n: required" {
		t.Errorf("a missing member: %+v", a)
	}
	if strings.Contains(p.Stderr(), "value-not-to-repeat") {
		t.Error("the log repeats a value of the observation")
	}
	code, data, _ := p.do("GET", "/v1/tools", map[string]string{"X-Tensorviz-Token": testToken}, nil)
	var tools struct{ Descriptors []wire.Descriptor }
	must(t, json.Unmarshal(data, &tools))
	if code != 200 || len(tools.Descriptors) != 1 || tools.Descriptors[0].SHA256 != sum ||
		string(tools.Descriptors[0].Tools[0].OutputSchema) != typedOutput {
		t.Errorf("/v1/tools: %d %s", code, data)
	}
	metrics := scrape(t, p)
	if !strings.Contains(metrics, `airlock_tool_calls_total{descriptor="typed",outcome="output-invalid",tool="echo"} 2`) {
		t.Errorf("output-invalid not counted:\n%s", grep(metrics, "airlock_tool_calls_total{descriptor=\"typed\""))
	}
	if !strings.Contains(metrics, `airlock_plugin_admission_failures_total{reason="schema-too-complex"} 1`) {
		t.Errorf("the outbomb refusal not counted:\n%s", grep(metrics, "admission"))
	}
}

// TestOutputSchemaOnMCP: tools/list carries the outputSchema and, in
// _meta, the executor and the module's hash under airlock/; tools/call
// returns a conforming observation as structuredContent and refuses a
// non-conforming one by name, with no structuredContent a client would
// hold to the schema (the refusal object is in the result's _meta).
func TestOutputSchemaOnMCP(t *testing.T) {
	t.Parallel()
	dir, sum, _ := outputSchemaPlugins(t)
	c := startMCP(t, nil, "--plugins", dir, "--no-builtin")
	tools := c.List(t)
	echo := tools["echo"]
	if echo == nil {
		t.Fatalf("echo not listed: %v", tools)
	}
	var want any
	must(t, json.Unmarshal([]byte(typedOutput), &want))
	if !reflect.DeepEqual(echo.OutputSchema, want) {
		t.Errorf("outputSchema %v", echo.OutputSchema)
	}
	if echo.Meta["airlock/executor"] != "local" || echo.Meta["airlock/sha256"] != sum || echo.Meta["executor"] != "local" {
		t.Errorf("_meta %v", echo.Meta)
	}
	if echo.Annotations == nil || !echo.Annotations.ReadOnlyHint || echo.Annotations.OpenWorldHint == nil || *echo.Annotations.OpenWorldHint {
		t.Errorf("annotations %+v", echo.Annotations)
	}
	if tools["bigout"] != nil {
		t.Error("the refused plugin's tool is listed")
	}

	res := c.Call(t, "echo", map[string]any{"n": 3})
	sc, _ := json.Marshal(res.StructuredContent)
	if res.IsError || string(sc) != `{"n":3}` {
		t.Errorf("a conforming result: %+v %s", res, sc)
	}
	res = c.Call(t, "echo", map[string]any{"n": "value-not-to-repeat"})
	if text := mcptest.Text(res); !res.IsError || text != "output-invalid: /n: type" || res.StructuredContent != nil {
		t.Errorf("a non-conforming result: %+v %q", res, text)
	}
	ref, _ := json.Marshal(res.Meta["airlock/refusal"])
	if !strings.Contains(string(ref), `"refused":"output-invalid"`) || !strings.Contains(string(ref), `"budget":{`) {
		t.Errorf("the refusal in _meta: %s", ref)
	}
}

// TestOutputSchemaOfAPeer: an environment's catalog may declare
// outputSchema; an entry whose outputSchema breaks the schema bounds is
// dropped and counted like an inputSchema's, and the broker holds the
// peer's observations to the kept one: a conforming answer reaches the
// caller, a non-conforming one is refused output-invalid.
func TestOutputSchemaOfAPeer(t *testing.T) {
	t.Parallel()
	w := newChanWorld(t)
	b := wire.Bounds{TimeoutMs: 60000, MemoryMiB: 1, MaxOutputBytes: 100, AllowedHosts: []string{}, Roots: []string{}}
	entry := func(id, output string) wire.Descriptor {
		return wire.Descriptor{DescriptorID: id, Bounds: b, Tools: []wire.Tool{{Name: id + "_tool", Description: "a peer tool",
			InputSchema: json.RawMessage(`{"type":"object"}`), OutputSchema: json.RawMessage(output)}}}
	}
	bomb := strings.Replace(testkit.SchemaBomb(40), `{`, `{"type":"object",`, 1)
	env := w.dialChannel("/channel", nil)
	env.send(wire.HelloFrame(w.pair("lab")))
	env.send(wire.CatalogFrame([]wire.Descriptor{entry("typed", typedOutput), entry("outbomb", bomb)}))
	testkit.Eventually(t, "the typed entry to be listed", func() bool { return w.tools()["typed"] == "machine:lab" })
	if _, ok := w.tools()["outbomb"]; ok {
		t.Error("the entry with a too complex outputSchema is listed")
	}
	if n := w.metric("airlock_channel_frames_rejected_total", `reason="schema-too-complex"`); n != 1 {
		t.Errorf("schema-too-complex counted %v, want 1", n)
	}
	answer := func(id, observed string) wire.Answer {
		res := w.callAsync(id, "typed", b, "typed_tool", `{}`)
		c := env.nextCall()
		env.send([]byte(`{"v":1,"callId":"` + c.CallID + `","ok":true,"observed":` + observed + `}`))
		return res()
	}
	if a := answer("good", `{"n":5}`); !a.OK || string(a.Observed) != `{"n":5}` {
		t.Errorf("a conforming peer answer: %+v", a)
	}
	if a := answer("bad", `{"n":[1]}`); a.OK || a.Refused != wire.OutputInvalid || a.Why != "/n: type" {
		t.Errorf("a non-conforming peer answer: %+v", a)
	}
}
