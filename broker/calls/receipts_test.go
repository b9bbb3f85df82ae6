package calls

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/airlock/airlock/broker/receipts"
	"github.com/airlock/airlock/executors/wire"
)

// lines reads the receipts of dir as records.
func lines(t *testing.T, dir string) []receipts.Record {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(dir, receipts.File))
	if err != nil {
		t.Fatal(err)
	}
	var out []receipts.Record
	for _, l := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		var r receipts.Record
		if err := json.Unmarshal([]byte(l), &r); err != nil {
			t.Fatal(err)
		}
		out = append(out, r)
	}
	return out
}

// TestReceiptOfEveryCall: a routed call's receipt names its door,
// executor, module and outcome; a call no source holds has one too,
// without an executor; under fail closed a call whose receipt cannot be
// written is refused audit-unavailable, and answered again once it can.
func TestReceiptOfEveryCall(t *testing.T) {
	dir := t.TempDir()
	log, err := receipts.Open(receipts.Options{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	defer log.Close()
	d := desc("d", "t")
	d.SHA256 = "m"
	r, _ := newRouter(fixed{{Descriptor: d, Executor: "machine:box", To: wire.ExecutorFunc(ok)}})
	r.Record(log, true)
	ctx := WithDoor(context.Background(), receipts.DoorMCPHTTP)
	if a := r.Call(ctx, call("d", "t")); !a.OK {
		t.Fatalf("answer %+v", a)
	}
	if a := r.Call(context.Background(), call("nobody", "t")); a.Refused != wire.UnattributedCall {
		t.Fatalf("answer %+v", a)
	}
	got := lines(t, dir)
	if len(got) != 2 {
		t.Fatalf("receipts %+v", got)
	}
	c := got[0]
	if c.Door != receipts.DoorMCPHTTP || c.Executor != "machine:box" || c.Module != "m" || c.Outcome != "ok" ||
		c.Budget == nil || c.Budget.RequestsUsed != 3 || len(c.ArgsHMAC) != 64 || len(c.Bounds) != 64 || c.DurationMs == nil {
		t.Errorf("the call's receipt: %+v", c)
	}
	if u := got[1]; u.Door != receipts.DoorOther || u.Executor != "" || u.Outcome != string(wire.UnattributedCall) {
		t.Errorf("an unattributed call's receipt: %+v", u)
	}

	path := filepath.Join(dir, receipts.File)
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.Remove(path))
	must(os.Mkdir(path, 0o700))
	for range 2 {
		if a := r.Call(ctx, call("d", "t")); a.Refused != wire.AuditUnavailable || a.CallID != "c1" {
			t.Fatalf("with no receipt file: %+v", a)
		}
	}
	must(os.Remove(path))
	if a := r.Call(ctx, call("d", "t")); !a.OK {
		t.Fatalf("once it can be written: %+v", a)
	}
}
