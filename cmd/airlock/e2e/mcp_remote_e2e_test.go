package e2e

import (
	"strings"
	"testing"

	"github.com/airlock/airlock/broker/mcp/mcptest"
	"github.com/airlock/airlock/executors/testkit"
)

// `airlock mcp --broker URL` checks the broker before it serves anything:
// an agent's host must not show a healthy server with no tools when the
// token is wrong or the broker is not there. PROTOCOL section 11.

// mcpStartRefused runs `airlock mcp` with args on an empty stdin and
// checks that it ends with code, one plain line on stderr containing each
// of want, and nothing on stdout (no MCP message).
func mcpStartRefused(t *testing.T, env []string, code int, want []string, args ...string) {
	t.Helper()
	got, stdout, stderr := runCLI(t, env, append([]string{"mcp"}, args...)...)
	if got != code {
		t.Fatalf("exit %d, want %d\nstderr: %s", got, code, stderr)
	}
	if stdout != "" {
		t.Errorf("stdout carried %q before the refusal", stdout)
	}
	lines := scanLines(strings.TrimSpace(stderr))
	if len(lines) != 1 {
		t.Fatalf("stderr has %d lines, want one plain line:\n%s", len(lines), stderr)
	}
	for _, w := range want {
		if !strings.Contains(lines[0], w) {
			t.Errorf("stderr %q does not say %q", lines[0], w)
		}
	}
}

func TestMCPRemoteRefusedTokenExits3(t *testing.T) {
	t.Parallel()
	p := startServe(t, withToken())
	wrong := "TENSORVIZ_LOCAL_TOKEN=not-the-token-of-this-broker"
	mcpStartRefused(t, []string{wrong}, 3, []string{"refused the launch token", p.URL(), "AIRLOCK_LOCAL_TOKEN", "--token-file"},
		"--broker", p.URL())
	if strings.Contains(p.Stderr(), "not-the-token-of-this-broker") {
		t.Error("the broker logged the refused token")
	}
}

func TestMCPRemoteUnreachableExits1(t *testing.T) {
	t.Parallel()
	url := "http://" + testkit.ResettingAddr(t) // no broker answers there
	mcpStartRefused(t, tokenEnv(), 1, []string{"cannot reach the broker", url, "--broker"}, "--broker", url)
}

// TestMCPRemoteBrokerLostIsSaid: a broker that goes away after start
// leaves its tools listed, and a call is refused by name, saying so.
func TestMCPRemoteBrokerLostIsSaid(t *testing.T) {
	t.Parallel()
	p := startServe(t, procOptions{Args: []string{"--root", "notes=" + notesRoot(t)}, Env: tokenEnv(), Secrets: []string{testToken}})
	c := startMCP(t, tokenEnv(), "--broker", p.URL())
	if tools := c.List(t); tools["read_notes"] == nil {
		t.Fatalf("tools %v", tools)
	}
	p.Stop()
	res := c.Call(t, "read_notes", map[string]any{"path": "a.md"})
	if !res.IsError || !strings.HasPrefix(mcptest.Text(res), "machine-unreachable: ") || !strings.Contains(mcptest.Text(res), p.URL()) {
		t.Fatalf("a call with the broker gone: %q, want machine-unreachable naming %s", mcptest.Text(res), p.URL())
	}
	if tools := c.List(t); tools["read_notes"] == nil {
		t.Errorf("the tools left the list without a word when the broker went: %v", tools)
	}
	testkit.Eventually(t, "airlock mcp logs that the broker is gone", func() bool {
		return strings.Contains(c.stderr.String(), "cannot reach the broker")
	})
	if n := strings.Count(c.stderr.String(), "cannot reach the broker"); n > 2 {
		t.Errorf("the loss was logged %d times; once is enough", n)
	}
}
