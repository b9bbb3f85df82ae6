package executors

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/airlock/airlock/config/plugincfg"
	"github.com/airlock/airlock/executors/testkit"
	"github.com/airlock/airlock/executors/wire"
)

// The fixture's builds: the same source as a command and as a reactor.
var configuredStyles = []struct{ name, file string }{
	{"command", "configured.wasm"},
	{"reactor", "configured-reactor.wasm"},
}

const (
	cfgSecret   = "sk-live-6f1e0a9c3b"
	otherSecret = "sk-other-44d2"
)

func configuredDescriptor(id string) wire.Descriptor {
	open := json.RawMessage(`{"type":"object"}`)
	return wire.Descriptor{DescriptorID: id, Bounds: defaultBounds(),
		Tools: []wire.Tool{{Name: "derive", InputSchema: open}, {Name: "leak", InputSchema: open}}}
}

func values(t *testing.T, raw map[string]any) *plugincfg.Values {
	t.Helper()
	v, err := plugincfg.Resolve(raw, nil)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

type derived struct {
	Found  bool
	Length int
	SHA256 string
	Value  string
}

func ask(t *testing.T, p *Program, tool, name string) derived {
	t.Helper()
	args, _ := json.Marshal(map[string]string{"name": name})
	var d derived
	if err := json.Unmarshal(mustOK(t, call(t, p, tool, string(args))), &d); err != nil {
		t.Fatal(err)
	}
	return d
}

func mustOK(t *testing.T, a wire.Answer) json.RawMessage {
	t.Helper()
	wantOK(t, a)
	return a.Observed
}

func sum(s string) string {
	h := sha256.Sum256([]byte(s))
	return hex.EncodeToString(h[:])
}

// TestConfigGet: a guest reads the declared names the operator set, in
// both styles; a declared name that is not set, a name it did not
// declare (another case of a declared one, one set for it but not
// declared, one too long) are not found, and the operator's log names
// the undeclared ask without any value.
func TestConfigGet(t *testing.T) {
	long := strings.Repeat("L", 1000) // past the SDK's first buffer
	for _, st := range configuredStyles {
		t.Run(st.name, func(t *testing.T) {
			var log testkit.Buffer
			r := newRuntime(t, Config{Logger: slog.New(slog.NewJSONHandler(&log, nil)), PluginConfig: values(t, map[string]any{
				"cfg":   map[string]any{"api_key": cfgSecret, "long": long, "set_not_declared": otherSecret},
				"other": map[string]any{"api_key": otherSecret},
			})})
			p, err := r.Load(context.Background(), configuredDescriptor("cfg"), testkit.Fixture(t, st.file),
				WithConfig([]string{"api_key", "long", "unset"}))
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = p.Close(context.Background()) })
			if got := strings.Join(p.ConfigNames(), ","); got != "api_key,long,unset" {
				t.Errorf("ConfigNames %s", got)
			}
			if d := ask(t, p, "derive", "api_key"); !d.Found || d.Length != len(cfgSecret) || d.SHA256 != sum(cfgSecret) {
				t.Errorf("api_key: %+v", d)
			}
			if d := ask(t, p, "derive", "long"); !d.Found || d.Length != len(long) || d.SHA256 != sum(long) {
				t.Errorf("long: %+v", d)
			}
			if d := ask(t, p, "derive", "unset"); d.Found || d.Length != 0 {
				t.Errorf("declared, not set: %+v", d)
			}
			for _, name := range []string{"API_KEY", "set_not_declared", "", strings.Repeat("a", 65), strings.Repeat("b", 5000)} {
				if d := ask(t, p, "leak", name); d.Found || d.Value != "" {
					t.Errorf("undeclared %.10q: %+v", name, d)
				}
			}
			logged := log.String()
			if strings.Contains(logged, cfgSecret) || strings.Contains(logged, otherSecret) || strings.Contains(logged, "LLLL") {
				t.Fatalf("a value reached the log:\n%s", logged)
			}
			for _, want := range []string{`"name":"API_KEY"`, `"name":"set_not_declared"`, `"name":"` + strings.Repeat("a", 65) + `"`} {
				if !strings.Contains(logged, "config name plugin.json does not declare") || !strings.Contains(logged, want) {
					t.Errorf("the log does not name the undeclared ask %s:\n%s", want, logged)
				}
			}
			// A new set of values reaches the next call, a reused reactor
			// instance included; a name the new set drops is not found.
			r.SetPluginConfig(values(t, map[string]any{"cfg": map[string]any{"api_key": "rotated"}}))
			if d := ask(t, p, "derive", "api_key"); d.SHA256 != sum("rotated") {
				t.Errorf("after SetPluginConfig: %+v", d)
			}
			if d := ask(t, p, "derive", "long"); d.Found {
				t.Errorf("a dropped name: %+v", d)
			}
		})
	}
}

// TestConfigGetWithoutDeclaration: a module loaded without WithConfig
// reads nothing, even names set for its own id.
func TestConfigGetWithoutDeclaration(t *testing.T) {
	r := newRuntime(t, Config{PluginConfig: values(t, map[string]any{"cfg": map[string]any{"api_key": cfgSecret}})})
	p := load(t, r, configuredDescriptor("cfg"), testkit.Fixture(t, "configured-reactor.wasm"))
	if d := ask(t, p, "leak", "api_key"); d.Found || d.Value != "" {
		t.Fatalf("read without declaring: %+v", d)
	}
}

// TestConfigGetBadRange: a name or buffer outside the guest's memory
// ends the call exec-threw, as for every host function.
func TestConfigGetBadRange(t *testing.T) {
	r := newRuntime(t, Config{PluginConfig: values(t, map[string]any{"cfg": map[string]any{"api_key": cfgSecret}})})
	p, err := r.Load(context.Background(), configuredDescriptor("cfg"), testkit.Fixture(t, "configured-reactor.wasm"),
		WithConfig([]string{"api_key"}))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Close(context.Background()) })
	s := p.newCallState(context.Background(), "call_1", "derive")
	defer s.cancel(nil)
	inst, err := p.newInstance(s)
	if err != nil {
		t.Fatal(err)
	}
	defer inst.close()
	size := uint64(inst.mod.Memory().Size())
	for name, stack := range map[string][]uint64{
		"name outside memory":   {size - 2, 7, 0, 0},
		"buffer outside memory": {0, 0, size - 2, 64},
	} {
		if name == "buffer outside memory" {
			// A declared name, so the value is written.
			if !inst.mod.Memory().WriteString(16, "api_key") {
				t.Fatal("write name")
			}
			stack = []uint64{16, 7, size - 2, 64}
		}
		func() {
			defer func() {
				var ref *refusal
				if rec := recover(); rec == nil || !errors.As(rec.(error), &ref) || ref.rule != wire.ExecThrew {
					t.Errorf("%s: recovered %v, want exec-threw", name, rec)
				}
			}()
			hostConfigGet(s.ctx, inst.mod, stack)
		}()
	}
}

// TestWithConfigRefusesBadNames: the descriptor's names are held to
// plugin.json's rules at Load too.
func TestWithConfigRefusesBadNames(t *testing.T) {
	r := newRuntime(t, Config{})
	for _, names := range [][]string{{"api.key"}, {"Key", "KEY"}} {
		_, err := r.Load(context.Background(), configuredDescriptor("cfg"), testkit.Fixture(t, "configured.wasm"), WithConfig(names))
		var a *AdmissionError
		if !errors.As(err, &a) || a.Reason != ReasonDescriptorInvalid {
			t.Errorf("%q: %v, want descriptor-invalid", names, err)
		}
	}
}

// TestConfiguredFixturesFreshBuild rebuilds the configured fixture from
// its source, both ways, and fails on any difference from the committed
// modules (as plugins/bundled does for the bundled ones): the test
// exercises exactly what the source says. After changing the source, run
// the commands in testdata/fixtures/README.md and commit the modules.
func TestConfiguredFixturesFreshBuild(t *testing.T) {
	if testing.Short() {
		t.Skip("builds two modules")
	}
	gobin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("go is not on PATH: cannot rebuild the fixtures")
	}
	src := testkit.FixturePath("configured")
	dir := t.TempDir()
	for _, st := range configuredStyles {
		out := filepath.Join(dir, st.file)
		args := []string{"build", "-trimpath", "-buildvcs=false"}
		if st.name == "reactor" {
			args = append(args, "-buildmode=c-shared")
		}
		cmd := exec.Command(gobin, append(args, "-o", out, ".")...)
		cmd.Dir = src
		cmd.Env = append(os.Environ(), "GOOS=wasip1", "GOARCH=wasm", "CGO_ENABLED=0")
		if b, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("%s: %v\n%s", st.file, err, b)
		}
		fresh, err := os.ReadFile(out)
		if err != nil {
			t.Fatal(err)
		}
		if committed := testkit.Fixture(t, st.file); !bytes.Equal(fresh, committed) {
			t.Errorf("%s: a fresh build (%d bytes, sha256 %s) differs from the committed module (%d bytes, sha256 %s); rebuild it as testdata/fixtures/README.md says",
				st.file, len(fresh), sum(string(fresh)), len(committed), sum(string(committed)))
		}
	}
}
