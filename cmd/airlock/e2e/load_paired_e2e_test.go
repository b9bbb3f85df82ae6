package e2e

import (
	"strings"
	"testing"

	"github.com/airlock/airlock/cmd/airlock/internal/load"
	"github.com/airlock/airlock/executors/wire"
)

// TestLoadCallsPairedE2E runs the paired shape of `airlock load calls` as
// an operator would: a broker serving the guest fixture from its plugins
// folder as fxlocal, `airlock pair add`, and `airlock env` serving the
// same module as fxpaired. It checks the report has the three sides, the
// floor and the ratios, and that every call was answered ok; never how
// fast.
func TestLoadCallsPairedE2E(t *testing.T) {
	t.Parallel()
	bounds := wire.Bounds{TimeoutMs: 5000, MemoryMiB: 64, MaxOutputBytes: 1 << 16, AllowedHosts: []string{}, Roots: []string{}}
	w := &chanWorld{t: t, data: t.TempDir(), bounds: bounds, brokEnv: tokenEnv()}
	w.broker = startServe(t, procOptions{Args: []string{"--data", w.data, "--no-builtin", "--plugins", chanPlugins(t, map[string]wire.Bounds{"fxlocal": bounds})},
		Env: w.brokEnv, Secrets: []string{testToken}})
	w.startEnv(w.pair("lab"), chanPlugins(t, map[string]wire.Bounds{"fxpaired": bounds}))
	w.waitServing("fxpaired", bounds)
	if got := w.tools(); got["fxpaired"] != "machine:lab" || got["fxlocal"] != "local" {
		t.Fatalf("descriptors %v", got)
	}
	args := []string{"load", "calls", "--broker", w.broker.URL(), "--tool", "echo", "--args", `{"text":"hello, airlock"}`,
		"--paired-descriptor", "fxpaired", "--local-descriptor", "fxlocal", "-d", "1s", "--warmup", "0s"}

	code, stdout, stderr := runCLI(t, tokenEnv(), append(args, "-c", "1,2", "--json")...)
	if code != 0 {
		t.Fatalf("exit %d\n%s", code, stderr)
	}
	if stderr != "" || strings.Contains(stdout, testToken) {
		t.Fatalf("--json should be quiet on stderr and never print the token; stderr:\n%s", stderr)
	}
	var reps []load.PairedReport
	decodeReport(t, stdout, &reps)
	if len(reps) != 2 {
		t.Fatalf("%d reports, want one per concurrency", len(reps))
	}
	for i, r := range reps {
		if r.Command != "calls" || r.Shape != "paired" || r.Tool != "echo" || r.Concurrency != i+1 || r.Interrupted ||
			r.PairedDescriptorID != "fxpaired" || r.PairedExecutor != "machine:lab" || r.LocalDescriptorID != "fxlocal" || r.LocalExecutor != "local" {
			t.Fatalf("header %+v", r)
		}
		if r.CallFrameBytes <= len(`{"text":"hello, airlock"}`) || r.AnswerFrameBytes <= 0 {
			t.Errorf("frames: %d bytes out, %d back", r.CallFrameBytes, r.AnswerFrameBytes)
		}
		for name, f := range r.Sides() {
			if f.Calls <= 0 || f.CallsPerSecond <= 0 || f.Seconds != 1 || !f.AllOK() {
				t.Errorf("-c %d %s: %+v", r.Concurrency, name, f)
			}
			if l := f.LatencyMs; l.P50 <= 0 || l.P50 > l.P90 || l.P90 > l.P99 || l.P99 > l.Max {
				t.Errorf("-c %d %s: latency %+v", r.Concurrency, name, l)
			}
		}
		if r.Floor == nil || r.Floor.CallsPerSecond <= 0 || r.Floor.P50Ms <= 0 {
			t.Errorf("-c %d: floor %+v", r.Concurrency, r.Floor)
		}
		if x := r.Ratios; x == nil || x.Throughput <= 0 || x.TimePerCall <= 0 || x.P50 <= 0 {
			t.Errorf("-c %d: ratios %+v", r.Concurrency, x)
		}
	}

	code, stdout, stderr = runCLI(t, tokenEnv(), append(args, "-c", "1")...)
	if code != 0 {
		t.Fatalf("exit %d\n%s", code, stderr)
	}
	for _, want := range []string{"echo on " + w.broker.URL() + ", paired descriptor fxpaired (machine:lab) beside local descriptor fxlocal, 1 callers",
		"\n  paired ", "\n  local ", "\n  rtt ", "\n  local + rtt ", "ratio paired/(local + rtt): calls/s ",
		"paired: POST /v1/calls to fxpaired, served by machine:lab over /channel", "rtt: one bare coder/websocket round trip on loopback to an echo in its own process (pid ", `paired outcomes: {"ok":`, `local outcomes: {"ok":`, `rtt outcomes: {"ok":`} {
		if !strings.Contains(stdout, want) {
			t.Errorf("stdout lacks %q:\n%s", want, stdout)
		}
	}
	if !strings.Contains(stderr, "paired ") || !strings.Contains(stderr, "rtt ") {
		t.Errorf("no progress line naming the sides on stderr:\n%s", stderr)
	}

	// Descriptors the other way round: the paired one is local.
	code, _, stderr = runCLI(t, tokenEnv(), "load", "calls", "--broker", w.broker.URL(), "--tool", "echo", "--args", "{}",
		"--paired-descriptor", "fxlocal", "--local-descriptor", "fxpaired", "-d", "1s")
	if code != 2 || !strings.Contains(stderr, "--paired-descriptor fxlocal is served by local, not a paired environment") {
		t.Errorf("swapped descriptors: exit %d\n%s", code, stderr)
	}
}

// TestLoadCallsPairedRefusals: the paired flags are refused, exit 2 with
// the rule named, when half given, naming one descriptor twice, or mixed
// with the plain-wazero baseline's flags; before any broker is reached.
func TestLoadCallsPairedRefusals(t *testing.T) {
	t.Parallel()
	base := []string{"load", "calls", "--broker", "http://127.0.0.1:1"}
	for name, c := range map[string]struct {
		args []string
		want string
	}{
		"paired alone":   {[]string{"--paired-descriptor", "a"}, "--paired-descriptor and --local-descriptor go together"},
		"local alone":    {[]string{"--local-descriptor", "a"}, "--paired-descriptor and --local-descriptor go together"},
		"same twice":     {[]string{"--paired-descriptor", "a", "--local-descriptor", "a"}, `must name two descriptors, got "a" twice`},
		"descriptor":     {[]string{"--paired-descriptor", "a", "--local-descriptor", "b", "--descriptor", "a"}, "--descriptor does not apply to the paired shape"},
		"baseline":       {[]string{"--paired-descriptor", "a", "--local-descriptor", "b", "--baseline", "none"}, "--baseline does not apply"},
		"reuse-instance": {[]string{"--paired-descriptor", "a", "--local-descriptor", "b", "--reuse-instance"}, "--reuse-instance does not apply"},
	} {
		t.Run(name, func(t *testing.T) {
			code, stdout, stderr := runCLI(t, tokenEnv(), append(base, c.args...)...)
			if code != 2 || stdout != "" || !strings.Contains(stderr, c.want) {
				t.Errorf("exit %d, stdout %q, stderr:\n%s\nwant exit 2 and %q", code, stdout, stderr, c.want)
			}
		})
	}
}
