package receipts

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/airlock/airlock/executors/wire"
)

// chainFile is a log of n records as the writer produces it.
func chainFile(f *testing.F, n int) []byte {
	dir := f.TempDir()
	l, err := Open(Options{Dir: dir})
	if err != nil {
		f.Fatal(err)
	}
	for i := 0; i < n; i++ {
		if err := l.Append(Record{Kind: KindCall, Door: DoorMCPHTTP, Tool: "t", CallID: "id", Outcome: "ok", Executor: "local"}); err != nil {
			f.Fatal(err)
		}
	}
	l.Close()
	data, err := os.ReadFile(filepath.Join(dir, File))
	if err != nil {
		f.Fatal(err)
	}
	return data
}

// FuzzVerify holds the verifier's properties on a file the writer
// produced: it verifies; flipping any byte of a record is reported at that
// record or the next (the last record's content has no next: a change
// there shows only against a head kept elsewhere, Report.Head); cutting
// it anywhere is accepted, with a torn note unless at a line end.
func FuzzVerify(f *testing.F) {
	data := chainFile(f, 6)
	f.Add(uint(0), byte(1), uint(len(data)))
	f.Add(uint(len(data)-1), byte('\n'^'x'), uint(17))
	f.Add(uint(100), byte('\n'^'"'), uint(200))
	f.Fuzz(func(t *testing.T, pos uint, flip byte, cut uint) {
		if rep, err := VerifyReader("f", bytes.NewReader(data)); err != nil || rep.Records != 6 || rep.Torn != "" {
			t.Fatalf("the writer's file: %+v %v", rep, err)
		}
		// A cut.
		c := int(cut % uint(len(data)+1))
		rep, err := VerifyReader("f", bytes.NewReader(data[:c]))
		if err != nil {
			t.Fatalf("cut at %d: %v", c, err)
		}
		if atLineEnd := c == 0 || data[c-1] == '\n'; atLineEnd != (rep.Torn == "") {
			t.Fatalf("cut at %d (line end %v): torn %q", c, atLineEnd, rep.Torn)
		}
		// A flip.
		if flip == 0 {
			return
		}
		p := int(pos % uint(len(data)))
		bad := bytes.Clone(data)
		bad[p] ^= flip
		line := bytes.Count(data[:p], []byte("\n")) + 1 // the record p is in (its newline included)
		records := bytes.Count(data, []byte("\n"))
		rep, err = VerifyReader("f", bytes.NewReader(bad))
		var b *Broken
		switch {
		case errors.As(err, &b):
			if b.Line != line && b.Line != line+1 {
				t.Fatalf("flip at %d (record %d) reported at line %d: %v", p, line, b.Line, err)
			}
		case err != nil:
			t.Fatalf("flip at %d: %v", p, err)
		case line < records:
			t.Fatalf("flip at %d (record %d of %d) not found: %+v", p, line, records, rep)
		case p == len(data)-1:
			if rep.Torn == "" {
				t.Fatalf("the last line end flipped: no torn note: %+v", rep)
			}
		}
	})
}

// FuzzAppendLine holds the hand-written line to json.Marshal's bytes, for
// plain records and for any other (which take json.Marshal's path).
func FuzzAppendLine(f *testing.F) {
	f.Add(uint64(1), "call", "v1", "machine:box", "notes", "read_notes", "call_1", "ok", "", 0.5, int64(1700000000123456789), 3, 10, true)
	f.Add(uint64(99), "plugin-admitted", "", "", "", "", "", "", "p<&>\u2028\"\\é", 1e-7, int64(-62135596800000000), 0, 0, false)
	f.Add(uint64(1<<63), "session-minted", "x\x00y", "", "", "", "", "", "s", 1e21, int64(0), -1, 1<<40, true)
	f.Fuzz(func(t *testing.T, seq uint64, kind, door, executor, descriptor, tool, callID, outcome, id string,
		ms float64, nanos int64, used, limit int, budget bool) {
		r := Record{Seq: seq, Prev: Genesis, Time: time.Unix(0, nanos).UTC(), Kind: Kind(kind), Door: door,
			Executor: executor, Descriptor: descriptor, Tool: tool, CallID: callID, ArgsHMAC: id, Bounds: id,
			Module: descriptor, Outcome: outcome, ID: id, DurationMs: &ms}
		if budget {
			r.Budget = &wire.Budget{RequestsUsed: used, RequestsLimit: limit}
		}
		if nanos%3 == 0 {
			r.DurationMs = nil
		}
		want, werr := json.Marshal(&r)
		got, gerr := appendLine([]byte("x"), &r)
		if (werr == nil) != (gerr == nil) || (werr == nil && !bytes.Equal(got[1:], want)) {
			t.Fatalf("appendLine\n%s, %v\njson.Marshal\n%s, %v", got, gerr, want, werr)
		}
	})
}
