package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"net"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// The MCP server checked by other people's tools, each run by Node from
// testdata/mcp-ts (its package-lock.json pins them): the TypeScript SDK's
// client, the MCP Inspector's CLI and the official conformance suite.

// nodePackages returns node and the folder of the pinned packages; without
// them the test skips, unless AIRLOCK_REQUIRE_NODE is set.
func nodePackages(t *testing.T, pkg string) (node, dir string) {
	t.Helper()
	dir, _ = filepath.Abs(filepath.Join("..", "..", "..", "testdata", "mcp-ts"))
	node, err := exec.LookPath("node")
	_, pkgErr := os.Stat(filepath.Join(dir, "node_modules", filepath.FromSlash(pkg)))
	if err != nil || pkgErr != nil {
		if os.Getenv("AIRLOCK_REQUIRE_NODE") != "" {
			t.Fatalf("node or %s is missing (npm ci in %s): %v %v", pkg, dir, err, pkgErr)
		}
		t.Skipf("node or %s is missing (npm ci in %s)", pkg, dir)
	}
	return node, dir
}

// runNode runs node with args in dir, bounded, and returns its stdout.
func runNode(t *testing.T, node, dir string, env []string, args ...string) (string, string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, args...)
	cmd.Dir = dir
	cmd.Env = append(append(baseEnv(t), "AIRLOCK_EXEC_CACHE_DIR="+cacheDir), env...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	return stdout.String(), stderr.String(), err
}

// tsRevisions are the revisions the TypeScript SDK's client speaks that
// the server accepts.
var tsRevisions = []string{"2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"}

// TestMCPTypeScriptClient: an independent client, the TypeScript SDK,
// connects on every revision it speaks, over stdio (`airlock mcp`) and
// over a running broker's /mcp, and lists, calls, is refused and is told
// a tool is unknown, the same on each. A typed tool is among them: the SDK
// holds any structuredContent to the tool's outputSchema, so a refusal of
// that tool must reach it by name without one.
func TestMCPTypeScriptClient(t *testing.T) {
	t.Parallel()
	node, dir := nodePackages(t, "@modelcontextprotocol/sdk")
	notes := notesRoot(t)
	typed, _, _ := outputSchemaPlugins(t)
	p := startServe(t, procOptions{Env: tokenEnv(), Secrets: []string{testToken}, Args: []string{"--root", "notes=" + notes, "--plugins", typed}})
	for _, revision := range tsRevisions {
		for _, transport := range []string{"stdio", "http"} {
			t.Run(revision+"/"+transport, func(t *testing.T) {
				t.Parallel()
				args := []string{"client.mjs", revision, transport, binPath, notes, t.TempDir(), typed}
				var env []string
				if transport == "http" {
					args = []string{"client.mjs", revision, transport, p.URL() + "/mcp"}
					env = []string{"MCP_TOKEN=" + testToken}
				}
				out, errOut, err := runNode(t, node, dir, env, args...)
				if err != nil {
					t.Fatalf("node client.mjs: %v\n%s", err, tail(errOut, 4000))
				}
				checkTypeScriptClient(t, revision, transport, out)
			})
		}
	}
}

// checkTypeScriptClient checks what client.mjs saw.
func checkTypeScriptClient(t *testing.T, revision, transport, out string) {
	t.Helper()
	var got struct {
		Revision string `json:"revision"`
		Protocol struct {
			Tools struct {
				ListChanged bool `json:"listChanged"`
			} `json:"tools"`
		} `json:"protocol"`
		Tools    []string `json:"tools"`
		ReadOnly bool     `json:"readOnly"`
		OK       struct {
			IsError    bool            `json:"isError"`
			Text       string          `json:"text"`
			Structured json.RawMessage `json:"structured"`
		} `json:"ok"`
		Refused struct {
			IsError bool   `json:"isError"`
			Text    string `json:"text"`
		} `json:"refused"`
		Unknown any `json:"unknown"`
		// Typed is the echo tool with an outputSchema.
		Typed struct {
			Good struct {
				IsError    bool            `json:"isError"`
				Structured json.RawMessage `json:"structured"`
			} `json:"good"`
			Bad struct {
				IsError    bool            `json:"isError"`
				Text       string          `json:"text"`
				Structured json.RawMessage `json:"structured"`
			} `json:"bad"`
		} `json:"typed"`
	}
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatalf("client output %q: %v", out, err)
	}
	// The stdio transport has no protocol version header to set, so the
	// SDK tells only the HTTP transport which revision was agreed.
	if transport == "http" && got.Revision != revision {
		t.Errorf("asked for %s, agreed %q", revision, got.Revision)
	}
	if !got.Protocol.Tools.ListChanged || !got.ReadOnly || !strings.Contains(strings.Join(got.Tools, ","), "read_notes") {
		t.Errorf("listing: %s", out)
	}
	if got.OK.IsError || !strings.Contains(got.OK.Text, "hello from a") || len(got.OK.Structured) == 0 {
		t.Errorf("read_notes: %s", out)
	}
	if !got.Refused.IsError || !strings.HasPrefix(got.Refused.Text, "args-invalid: ") {
		t.Errorf("refusal: %s", out)
	}
	if got.Unknown == nil {
		t.Errorf("an unknown tool was not an error: %s", out)
	}
	// output-invalid reaches the SDK by name, not as a schema error of its own.
	if got.Typed.Good.IsError || string(got.Typed.Good.Structured) != `{"n":1}` {
		t.Errorf("a conforming typed result: %s", out)
	}
	if !got.Typed.Bad.IsError || got.Typed.Bad.Text != "output-invalid: /n: type" || string(got.Typed.Bad.Structured) != "null" {
		t.Errorf("a non-conforming typed result: %s", out)
	}
}

// TestMCPInspectorCLI: the MCP Inspector's command line (the CLI that
// `@modelcontextprotocol/inspector --cli` runs) lists and calls a tool of
// `airlock mcp` over stdio.
func TestMCPInspectorCLI(t *testing.T) {
	t.Parallel()
	node, dir := nodePackages(t, "@modelcontextprotocol/inspector-cli")
	// The CLI reads its own package.json by a path it checks relative to
	// the working folder, so it runs from its build folder.
	build := filepath.Join(dir, "node_modules", "@modelcontextprotocol", "inspector-cli", "build")
	server := []string{"cli.js", "--cli", binPath, "mcp", "--root", "notes=" + notesRoot(t), "--data", t.TempDir()}

	out, errOut, err := runNode(t, node, build, nil, append(server, "--method", "tools/list")...)
	var list struct {
		Tools []struct {
			Name        string          `json:"name"`
			InputSchema json.RawMessage `json:"inputSchema"`
		} `json:"tools"`
	}
	if err != nil || json.Unmarshal([]byte(out), &list) != nil {
		t.Fatalf("inspector tools/list: %v\nstdout:\n%s\nstderr:\n%s", err, tail(out, 4000), tail(errOut, 4000))
	}
	listed := map[string]bool{}
	for _, tool := range list.Tools {
		listed[tool.Name] = len(tool.InputSchema) > 0
	}
	if !listed["read_notes"] || !listed["fetch_url"] {
		t.Errorf("inspector tools/list lacks read_notes or fetch_url, or their schemas:\n%s", out)
	}

	out, errOut, err = runNode(t, node, build, nil, append(server, "--method", "tools/call", "--tool-name", "read_notes", "--tool-arg", "path=a.md")...)
	var call struct {
		Content []struct {
			Type, Text string
		} `json:"content"`
		Structured struct {
			Text string `json:"text"`
		} `json:"structuredContent"`
		IsError bool `json:"isError"`
	}
	if err != nil || json.Unmarshal([]byte(out), &call) != nil {
		t.Fatalf("inspector tools/call: %v\nstdout:\n%s\nstderr:\n%s", err, tail(out, 4000), tail(errOut, 4000))
	}
	if call.IsError || call.Structured.Text != "hello from a\n" || len(call.Content) != 1 || !strings.Contains(call.Content[0].Text, "hello from a") {
		t.Errorf("inspector tools/call read_notes:\n%s", out)
	}
}

// tokenProxy is what an agent's host does for /mcp: it adds the launch
// token to every request. The conformance tool cannot be given a header,
// so it speaks to this loopback proxy, which forwards to the broker. The
// proxy is otherwise transparent: a loopback Host or Origin that names
// the proxy's port is given the broker's port, as if the client had
// dialled the broker, and every other Host or Origin (a rebinding
// attack's) reaches the broker as sent, so its own guards answer.
func tokenProxy(t *testing.T, p *proc) string {
	t.Helper()
	target, err := url.Parse(p.URL())
	must(t, err)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	must(t, err)
	_, proxyPort, _ := net.SplitHostPort(ln.Addr().String())
	translate := func(authority string) string {
		host, port, err := net.SplitHostPort(authority)
		if err != nil || port != proxyPort || (host != "127.0.0.1" && host != "localhost" && host != "::1") {
			return authority
		}
		return net.JoinHostPort(host, target.Port())
	}
	rp := &httputil.ReverseProxy{
		Rewrite: func(r *httputil.ProxyRequest) {
			r.SetURL(target)
			r.Out.Host = translate(r.In.Host)
			if o, err := url.Parse(r.In.Header.Get("Origin")); err == nil && o.Scheme == "http" && len(r.In.Header.Values("Origin")) == 1 {
				o.Host = translate(o.Host)
				r.Out.Header.Set("Origin", o.String())
			}
			r.Out.Header.Set("Authorization", "Bearer "+testToken)
		},
		FlushInterval: -1, // event streams pass at once
	}
	srv := httptest.NewUnstartedServer(rp)
	srv.Listener.Close()
	srv.Listener = ln
	srv.Start()
	t.Cleanup(srv.Close)
	return srv.URL
}

// TestMCPConformanceSuite runs the official conformance tool's whole
// active server suite against /mcp, with a baseline
// (testdata/mcp-ts/conformance-baseline.yml) naming the scenarios a
// server that offers only its own tools cannot pass, each with why. The
// tool fails on a scenario that fails outside the baseline and on one in
// the baseline that passes, so the list stays exact.
func TestMCPConformanceSuite(t *testing.T) {
	t.Parallel()
	node, dir := nodePackages(t, "@modelcontextprotocol/conformance")
	p := startServe(t, procOptions{Env: tokenEnv(), Secrets: []string{testToken},
		Args: []string{"--root", "notes=" + notesRoot(t)}})
	endpoint := tokenProxy(t, p) + "/mcp"
	out, errOut, err := runNode(t, node, dir, nil, "--import", "./globsync-register.mjs", "node_modules/.bin/conformance",
		"server", "--url", endpoint, "--expected-failures", "conformance-baseline.yml", "-o", t.TempDir())
	if err != nil || !strings.Contains(out, "Baseline check passed") {
		t.Fatalf("the conformance suite: %v\nstdout:\n%s\nstderr:\n%s", err, tail(out, 8000), tail(errOut, 4000))
	}
	for _, scenario := range []string{
		"server-initialize", "ping", "logging-set-level", "tools-list",
		"server-sse-multiple-streams", "dns-rebinding-protection",
		"resources-list", "prompts-list",
	} {
		if !regexp.MustCompile(`✓ ` + scenario + `: [1-9][0-9]* passed, 0 failed`).MatchString(out) {
			t.Errorf("scenario %s did not pass:\n%s", scenario, tail(out, 8000))
		}
	}
}
