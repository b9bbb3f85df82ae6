package e2e

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/airlock/airlock/broker/localclient"
	"github.com/airlock/airlock/broker/receipts"
	"github.com/airlock/airlock/cmd/airlock/internal/exitcode"
	"github.com/airlock/airlock/executors/testkit"
	"github.com/airlock/airlock/executors/wire"
	"github.com/airlock/airlock/plugins"
)

// receiptsOf reads every receipt of the data directory dir (every file,
// whole lines only), keyed by callId.
func receiptsOf(t *testing.T, dir string) map[string]map[string]any {
	t.Helper()
	names, _ := filepath.Glob(filepath.Join(dir, "receipts*.jsonl"))
	out := map[string]map[string]any{}
	for _, name := range names {
		f, err := os.Open(name)
		if err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			var r map[string]any
			if json.Unmarshal(sc.Bytes(), &r) == nil {
				if id, ok := r["callId"].(string); ok {
					out[id] = r
				}
			}
		}
		f.Close()
	}
	return out
}

// readNotesCall is a read_notes call envelope with its own callId.
func readNotesCall(id string, bounds json.RawMessage) string {
	return fmt.Sprintf(`{"v":1,"callId":%q,"tool":"read_notes","descriptorId":"notes","args":{"path":"a.md"},"boundsEcho":%s}`, id, bounds)
}

// TestReceiptsSurviveSIGKILL: a broker with audit.fsync always, killed
// with SIGKILL while callers on several goroutines call, leaves a log
// that `airlock audit verify` accepts and that holds a receipt of every
// call a caller saw answered; the next broker continues the chain.
func TestReceiptsSurviveSIGKILL(t *testing.T) {
	t.Parallel()
	data, notes := t.TempDir(), notesRoot(t)
	seen := map[string]bool{}
	for round := range 10 {
		p := startServe(t, procOptions{Args: []string{"--data", data, "--root", "notes=" + notes},
			Env: append(tokenEnv(), "AIRLOCK_AUDIT_FSYNC=always"), Secrets: []string{testToken}})
		bounds := notesBounds(t, p)
		killAfter := int64(3 + 5*round) // answered calls before the kill
		var answered atomic.Int64
		var mu sync.Mutex
		var wg sync.WaitGroup
		killed := make(chan struct{})
		var once sync.Once
		for g := range 4 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := 0; ; i++ {
					id := fmt.Sprintf("r%d-g%d-%d", round, g, i)
					a, err := tryPostCall(p, readNotesCall(id, bounds))
					if err != nil {
						return // the broker is gone
					}
					if !a.OK {
						t.Errorf("%s: %+v", id, a)
						return
					}
					mu.Lock()
					seen[id] = true
					mu.Unlock()
					if answered.Add(1) >= killAfter {
						once.Do(func() { p.Kill(); close(killed) })
					}
					select {
					case <-killed:
						return
					default:
					}
				}
			}()
		}
		wg.Wait()
		once.Do(func() { p.Kill() })
		code, stdout, stderr := runCLI(t, nil, "audit", "verify", "--data", data)
		if code != exitcode.OK || !strings.HasPrefix(stdout, "ok: ") && !strings.HasPrefix(stdout, "note: ") {
			t.Fatalf("round %d: audit verify exited %d: %s%s", round, code, stdout, stderr)
		}
		got := receiptsOf(t, data)
		for id := range seen {
			r, ok := got[id]
			if !ok {
				t.Fatalf("round %d: call %s was answered but has no receipt", round, id)
			}
			if r["door"] != "v1" || r["outcome"] != "ok" || r["executor"] != "local" || r["tool"] != "read_notes" {
				t.Fatalf("round %d: receipt of %s: %v", round, id, r)
			}
		}
	}
	if len(seen) < 10*3 {
		t.Fatalf("only %d calls answered", len(seen))
	}
}

// TestReceiptsHoldNoArguments: a receipt names the door, executor,
// module and outcome, keeps the arguments only as an HMAC, and `audit
// tail` prints it.
func TestReceiptsHoldNoArguments(t *testing.T) {
	t.Parallel()
	data, notes := t.TempDir(), notesRoot(t)
	p := startServe(t, procOptions{Args: []string{"--data", data, "--root", "notes=" + notes}, Env: tokenEnv(), Secrets: []string{testToken}})
	bounds := notesBounds(t, p)
	const secretPath = "a.md"
	if a, err := tryPostCall(p, readNotesCall("door-v1", bounds)); err != nil || !a.OK {
		t.Fatalf("call: %+v %v", a, err)
	}
	s := openHTTPSessionAt(t, p, "2025-11-25")
	if status, body, _ := s.post(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"read_notes","arguments":{"path":"a.md"}}}`); status != 200 {
		t.Fatalf("tools/call: %d %s", status, body)
	}
	p.Stop()
	raw, _ := os.ReadFile(filepath.Join(data, "receipts.jsonl"))
	if strings.Contains(string(raw), secretPath) || strings.Contains(string(raw), testToken) {
		t.Fatalf("a receipt holds an argument or the token:\n%s", raw)
	}
	got := receiptsOf(t, data)
	v1 := got["door-v1"]
	if v1 == nil || len(v1["argsHmac"].(string)) != 64 || len(v1["module"].(string)) != 64 || len(v1["bounds"].(string)) != 64 {
		t.Fatalf("the v1 receipt: %v", v1)
	}
	doors := map[string]int{}
	for _, r := range got {
		doors[r["door"].(string)]++
		if r["argsHmac"] != v1["argsHmac"] {
			t.Errorf("the same args, another HMAC: %v", r)
		}
	}
	if doors["v1"] != 1 || doors["mcp-http"] != 1 {
		t.Fatalf("doors %v", doors)
	}
	code, stdout, stderr := runCLI(t, nil, "audit", "tail", "-n", "1", "--data", data)
	if code != 0 || !strings.Contains(stdout, " call mcp-http local notes/read_notes ") || strings.Count(stdout, "\n") != 1 {
		t.Fatalf("audit tail: %d %q %s", code, stdout, stderr)
	}
	code, stdout, _ = runCLI(t, nil, "audit", "tail", "--json", "--data", data)
	// Two plugins admitted, then the two calls.
	if code != 0 || strings.Count(stdout, "\n") != 4 || !strings.HasPrefix(stdout, `{"seq":1,"prev":"0000`) ||
		!strings.Contains(stdout, `"kind":"plugin-admitted"`) {
		t.Fatalf("audit tail --json: %d %q", code, stdout)
	}
}

// TestReceiptsMCPStdioDoor: `airlock mcp` writes receipts of its calls
// with door mcp-stdio.
func TestReceiptsMCPStdioDoor(t *testing.T) {
	t.Parallel()
	data := t.TempDir()
	c := startMCP(t, nil, "--root", "notes="+notesRoot(t), "--data", data)
	if res := c.Call(t, "read_notes", map[string]any{"path": "a.md"}); res.IsError {
		t.Fatalf("read_notes: %+v", res)
	}
	for _, r := range receiptsOf(t, data) {
		if r["door"] != "mcp-stdio" || r["outcome"] != "ok" {
			t.Fatalf("receipt %v", r)
		}
		return
	}
	t.Fatal("no receipt")
}

// breakReceipts puts a directory where the receipt file was: writing
// then fails for root too. restore takes it away again.
func breakReceipts(t *testing.T, data string) (restore func()) {
	path := filepath.Join(data, "receipts.jsonl")
	must(t, os.Remove(path))
	must(t, os.Mkdir(path, 0o700))
	return func() { must(t, os.Remove(path)) }
}

// TestReceiptsFailClosed: with audit.fail closed, a call whose receipt
// cannot be written is refused audit-unavailable until writing works
// again; verify then names the records lost with the removed file.
func TestReceiptsFailClosed(t *testing.T) {
	t.Parallel()
	data, notes := t.TempDir(), notesRoot(t)
	p := startServe(t, procOptions{Args: []string{"--data", data, "--root", "notes=" + notes},
		Env: append(tokenEnv(), "AIRLOCK_AUDIT_FAIL=closed"), Secrets: []string{testToken}})
	bounds := notesBounds(t, p)
	call := func(id string) wire.Answer {
		a, err := tryPostCall(p, readNotesCall(id, bounds))
		if err != nil {
			t.Fatal(err)
		}
		return a
	}
	if a := call("before"); !a.OK {
		t.Fatalf("before: %+v", a)
	}
	restore := breakReceipts(t, data)
	for _, id := range []string{"broken-1", "broken-2"} {
		if a := call(id); a.OK || a.Refused != wire.AuditUnavailable || a.CallID != id {
			t.Fatalf("%s: %+v", id, a)
		}
	}
	restore()
	if a := call("after"); !a.OK {
		t.Fatalf("after: %+v", a)
	}
	m := scrape(t, p)
	for _, want := range []string{"airlock_receipt_failures_total 2", `airlock_tool_calls_total{descriptor="notes",outcome="audit-unavailable",tool="read_notes"} 2`} {
		if !strings.Contains(m, want) {
			t.Errorf("metrics lack %s", want)
		}
	}
	code, stdout, stderr := runCLI(t, nil, "audit", "verify", "--data", data)
	// Two plugins admitted and the call before: records 1 to 3 went with the file.
	if code != exitcode.Refused || !strings.Contains(stderr, "receipts.jsonl:1: the chain starts at seq 4: records 1 to 3 are missing") {
		t.Fatalf("verify after a removed file: %d %s%s", code, stdout, stderr)
	}
}

// TestReceiptsFailOpen: by default a call whose receipt cannot be written
// is answered; the failure is logged once per streak and counted.
func TestReceiptsFailOpen(t *testing.T) {
	t.Parallel()
	data, notes := t.TempDir(), notesRoot(t)
	p := startServe(t, procOptions{Args: []string{"--data", data, "--root", "notes=" + notes}, Env: tokenEnv(), Secrets: []string{testToken}})
	bounds := notesBounds(t, p)
	restore := breakReceipts(t, data)
	for _, id := range []string{"open-1", "open-2", "open-3"} {
		if a, err := tryPostCall(p, readNotesCall(id, bounds)); err != nil || !a.OK {
			t.Fatalf("%s: %+v %v", id, a, err)
		}
	}
	restore()
	if a, err := tryPostCall(p, readNotesCall("open-4", bounds)); err != nil || !a.OK {
		t.Fatalf("after: %+v %v", a, err)
	}
	if n := strings.Count(p.Stderr(), "receipts: a receipt could not be written"); n != 1 {
		t.Errorf("the failure streak logged %d times:\n%s", n, p.Stderr())
	}
	if !strings.Contains(scrape(t, p), "airlock_receipt_failures_total 3") {
		t.Error("failures not counted")
	}
	if got := receiptsOf(t, data); got["open-4"] == nil {
		t.Error("no receipt once writing works again")
	}
}

// eventsOf lists the admission events of dir's receipts as "kind id", in
// order.
func eventsOf(t *testing.T, dir string) []string {
	t.Helper()
	data, _ := os.ReadFile(filepath.Join(dir, "receipts.jsonl"))
	var out []string
	for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		var r struct{ Kind, ID string }
		if json.Unmarshal([]byte(line), &r) == nil && r.Kind != "call" && r.Kind != "" {
			out = append(out, r.Kind+" "+r.ID)
		}
	}
	return out
}

// TestReceiptsAdmissionEvents: plugins admitted, admitted again and
// retired, pairings added and removed, sessions minted and ended each get
// a receipt naming them by id, and no credential is written.
func TestReceiptsAdmissionEvents(t *testing.T) {
	t.Parallel()
	data, plugDir := t.TempDir(), t.TempDir()
	b := wire.Bounds{TimeoutMs: 5000, MemoryMiB: 32, MaxOutputBytes: 4096, AllowedHosts: []string{}, Roots: []string{}}
	must(t, plugins.WriteFolder(plugDir, fxManifestOf("fx", b, "echo"), testkit.Fixture(t, "guest.wasm")))
	p := startServe(t, procOptions{Args: []string{"--data", data, "--plugins", plugDir, "--no-builtin"},
		Env: []string{"TENSORVIZ_LOCAL_TOKEN=" + sessionToken}, Secrets: []string{sessionToken}})
	wantEvents := func(want ...string) {
		t.Helper()
		testkit.Eventually(t, strings.Join(want, ", "), func() bool { return slices.Equal(eventsOf(t, data), want) })
	}
	wantEvents("plugin-admitted fx")

	m := p.mintFor(t, localclient.MintOptions{})
	must(t, p.client().End(tctx(t), m.WorkspaceSessionID))
	id := m.WorkspaceSessionID
	wantEvents("plugin-admitted fx", "session-minted "+id, "session-expired "+id)

	code, bearer, stderr := runCLI(t, nil, "pair", "add", "box", "--data", data)
	if code != 0 {
		t.Fatalf("pair add: %d %s", code, stderr)
	}
	p.AddSecret(strings.TrimSpace(bearer))
	wantEvents("plugin-admitted fx", "session-minted "+id, "session-expired "+id, "pairing-added box")
	if code, _, stderr := runCLI(t, nil, "pair", "rm", "box", "--data", data); code != 0 {
		t.Fatalf("pair rm: %d %s", code, stderr)
	}
	wantEvents("plugin-admitted fx", "session-minted "+id, "session-expired "+id, "pairing-added box", "pairing-removed box")

	must(t, plugins.WriteFolder(plugDir, fxManifestOf("fx", b, "echo", "fail"), testkit.Fixture(t, "guest.wasm")))
	wantEvents("plugin-admitted fx", "session-minted "+id, "session-expired "+id, "pairing-added box", "pairing-removed box",
		"plugin-readmitted fx")
	must(t, os.RemoveAll(filepath.Join(plugDir, "fx")))
	wantEvents("plugin-admitted fx", "session-minted "+id, "session-expired "+id, "pairing-added box", "pairing-removed box",
		"plugin-readmitted fx", "plugin-retired fx")

	raw, _ := os.ReadFile(filepath.Join(data, "receipts.jsonl"))
	for _, secret := range []string{sessionToken, m.ViewCredential, m.HostCookieKey, strings.TrimSpace(bearer)} {
		if strings.Contains(string(raw), secret) {
			t.Fatal("a receipt holds a credential")
		}
	}
	if code, stdout, stderr := runCLI(t, nil, "audit", "verify", "--data", data); code != 0 {
		t.Fatalf("verify: %d %s%s", code, stdout, stderr)
	}
}

// receiptsFixture is a data directory holding a log of three receipts,
// and a copy of that log whose second record was changed.
func receiptsFixture(t *testing.T) (dir, tampered string) {
	t.Helper()
	dir = t.TempDir()
	l, err := receipts.Open(receipts.Options{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"one", "two", "three"} {
		must(t, l.Append(receipts.Record{Kind: receipts.KindCall, Door: receipts.DoorV1, CallID: id, Outcome: "ok"}))
	}
	must(t, l.Close())
	data, err := os.ReadFile(filepath.Join(dir, receipts.File))
	must(t, err)
	tampered = filepath.Join(t.TempDir(), "tampered.jsonl")
	must(t, os.WriteFile(tampered, []byte(strings.Replace(string(data), `"callId":"two","outcome":"ok"`, `"callId":"two","outcome":"no"`, 1)), 0o600))
	return dir, tampered
}

// TestReceiptsServeAndMCPShareOneChain: `airlock serve` and `airlock mcp`
// on one data directory write one chain, each receipt continuing from the
// other's last.
func TestReceiptsServeAndMCPShareOneChain(t *testing.T) {
	t.Parallel()
	data, notes := t.TempDir(), notesRoot(t)
	p := startServe(t, procOptions{Args: []string{"--data", data, "--root", "notes=" + notes}, Env: tokenEnv(), Secrets: []string{testToken}})
	c := startMCP(t, nil, "--root", "notes="+notes, "--data", data)
	bounds := notesBounds(t, p)
	for i := range 3 {
		if a, err := tryPostCall(p, readNotesCall(fmt.Sprintf("serve-%d", i), bounds)); err != nil || !a.OK {
			t.Fatalf("serve call: %+v %v", a, err)
		}
		if res := c.Call(t, "read_notes", map[string]any{"path": "a.md"}); res.IsError {
			t.Fatalf("mcp call: %+v", res)
		}
	}
	doors := map[any]int{}
	for _, r := range receiptsOf(t, data) {
		doors[r["door"]]++
	}
	if doors["v1"] != 3 || doors["mcp-stdio"] != 3 {
		t.Fatalf("doors %v", doors)
	}
	if code, stdout, stderr := runCLI(t, nil, "audit", "verify", "--data", data); code != 0 {
		t.Fatalf("verify: %d %s%s", code, stdout, stderr)
	}
}

// TestReceiptsTornTailAfterCrash: a final line a crash cut short is a
// note to `audit verify`, not a break; the next broker cuts it and goes on
// from the last complete record, and verify passes without the note.
func TestReceiptsTornTailAfterCrash(t *testing.T) {
	t.Parallel()
	data, notes := t.TempDir(), notesRoot(t)
	args := procOptions{Args: []string{"--data", data, "--root", "notes=" + notes}, Env: tokenEnv(), Secrets: []string{testToken}}
	p := startServe(t, args)
	if a, err := tryPostCall(p, readNotesCall("before", notesBounds(t, p))); err != nil || !a.OK {
		t.Fatalf("call: %+v %v", a, err)
	}
	p.Kill()
	f, err := os.OpenFile(filepath.Join(data, "receipts.jsonl"), os.O_APPEND|os.O_WRONLY, 0)
	must(t, err)
	_, err = f.WriteString(`{"seq":4,"prev":"5d95`)
	must(t, err)
	must(t, f.Close())
	code, stdout, stderr := runCLI(t, nil, "audit", "verify", "--data", data)
	if code != 0 || !strings.Contains(stdout, "receipts.jsonl:4: a torn final record (21 bytes without a line end)") || !strings.Contains(stdout, "ok: 3 records") {
		t.Fatalf("verify with a torn tail: %d %s%s", code, stdout, stderr)
	}
	p = startServe(t, args)
	if a, err := tryPostCall(p, readNotesCall("after", notesBounds(t, p))); err != nil || !a.OK {
		t.Fatalf("call: %+v %v", a, err)
	}
	p.Stop()
	if !strings.Contains(p.Stderr(), `"bytes":21`) {
		t.Errorf("the cut is not logged:\n%s", p.Stderr())
	}
	code, stdout, stderr = runCLI(t, nil, "audit", "verify", "--data", data)
	if code != 0 || strings.Contains(stdout, "note:") || !strings.Contains(stdout, "last seq 6") {
		t.Fatalf("verify after the restart: %d %s%s", code, stdout, stderr)
	}
}
