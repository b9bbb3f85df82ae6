package receipts

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/airlock/airlock/executors/wire"
)

func open(t *testing.T, dir string, o Options) *Log {
	t.Helper()
	o.Dir = dir
	l, err := Open(o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	return l
}

func appendN(t *testing.T, l *Log, n int) {
	t.Helper()
	for i := 0; i < n; i++ {
		if err := l.Append(Record{Kind: KindCall, Door: DoorV1, Tool: "read_notes", CallID: "c", Outcome: "ok"}); err != nil {
			t.Fatal(err)
		}
	}
}

func verifyDir(t *testing.T, dir string) Report {
	t.Helper()
	files, err := Files(dir)
	if err != nil {
		t.Fatal(err)
	}
	rep, err := Verify(files)
	if err != nil {
		t.Fatalf("verify: %v", err)
	}
	return rep
}

func TestChainVerifiesAndContinuesAfterReopen(t *testing.T) {
	dir := t.TempDir()
	l := open(t, dir, Options{Fsync: FsyncAlways})
	appendN(t, l, 3)
	l.Close()
	l = open(t, dir, Options{})
	appendN(t, l, 2)
	l.Close()
	rep := verifyDir(t, dir)
	if rep.Records != 5 || rep.Last != 5 || rep.Torn != "" {
		t.Fatalf("report %+v", rep)
	}
	data, _ := os.ReadFile(filepath.Join(dir, File))
	first, _, _ := bytes.Cut(data, []byte("\n"))
	var r Record
	if err := json.Unmarshal(first, &r); err != nil || r.Seq != 1 || r.Prev != Genesis || r.Time.IsZero() {
		t.Fatalf("first record %s: %v", first, err)
	}
}

func TestTornTailIsCutOnOpen(t *testing.T) {
	dir := t.TempDir()
	l := open(t, dir, Options{})
	appendN(t, l, 2)
	l.Close()
	path := filepath.Join(dir, File)
	f, _ := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	f.WriteString(`{"seq":3,"prev":"ab`)
	f.Close()
	if rep := verifyDir(t, dir); rep.Torn == "" || rep.Records != 2 {
		t.Fatalf("a torn tail is a note: %+v", rep)
	}
	l = open(t, dir, Options{})
	appendN(t, l, 1)
	l.Close()
	if rep := verifyDir(t, dir); rep.Torn != "" || rep.Records != 3 {
		t.Fatalf("after reopening: %+v", rep)
	}
}

func TestRotationKeepsTheChain(t *testing.T) {
	dir := t.TempDir()
	l := open(t, dir, Options{MaxFileBytes: 600})
	appendN(t, l, 12)
	l.Close()
	files, _ := Files(dir)
	if len(files) < 3 || filepath.Base(files[0]) != "receipts-00000000000000000001.jsonl" || filepath.Base(files[len(files)-1]) != File {
		t.Fatalf("files %v", files)
	}
	l = open(t, dir, Options{MaxFileBytes: 600})
	appendN(t, l, 3)
	l.Close()
	if rep := verifyDir(t, dir); rep.Records != 15 {
		t.Fatalf("report %+v", rep)
	}
	// A rotated file removed is found at the record after it.
	files, _ = Files(dir)
	os.Remove(files[1])
	_, err := Verify(slicesWithout(files, 1))
	var b *Broken
	if !errors.As(err, &b) || b.File != files[2] || b.Line != 1 || !strings.Contains(b.Why, "missing") {
		t.Fatalf("a missing file: %v", err)
	}
}

func slicesWithout(s []string, i int) []string {
	return append(append([]string{}, s[:i]...), s[i+1:]...)
}

func TestRemovedFileIsReopenedAndTheGapShows(t *testing.T) {
	dir := t.TempDir()
	l := open(t, dir, Options{})
	appendN(t, l, 2)
	path := filepath.Join(dir, File)
	os.Remove(path)
	os.Mkdir(path, 0o700)
	if err := l.Append(Record{Kind: KindCall}); !errors.Is(err, ErrUnavailable) || l.Healthy() {
		t.Fatalf("a directory in place of the file: %v", err)
	}
	os.Remove(path)
	appendN(t, l, 1)
	if !l.Healthy() {
		t.Fatal("writing works again but the log is not healthy")
	}
	l.Close()
	files, _ := Files(dir)
	_, err := Verify(files)
	var b *Broken
	if !errors.As(err, &b) || b.Line != 1 || !strings.Contains(b.Why, "records 1 to 2 are missing") {
		t.Fatalf("the lost records: %v", err)
	}
}

func TestArgsHMACIsCanonicalAndKeyPrivate(t *testing.T) {
	dir := t.TempDir()
	l := open(t, dir, Options{})
	a, b := l.Args([]byte(`{"b":1,"a":"x"}`)), l.Args([]byte(`{ "a" : "x", "b" : 1 }`))
	if a != b || len(a) != 64 || a == l.Args([]byte(`{"a":"y","b":1}`)) {
		t.Fatalf("hmac %s %s", a, b)
	}
	fi, err := os.Stat(filepath.Join(dir, KeyFile))
	if err != nil || fi.Mode().Perm() != 0o600 || fi.Size() != 32 {
		t.Fatalf("key file %v %v", fi, err)
	}
	l.Close()
	if other := open(t, dir, Options{}); other.Args([]byte(`{"a":"x","b":1}`)) != a {
		t.Fatal("the key changed on reopening")
	}
	os.Chmod(filepath.Join(dir, KeyFile), 0o644)
	if _, err := Open(Options{Dir: dir}); !errors.Is(err, ErrKey) {
		t.Fatalf("a key others can read: %v", err)
	}
}

func TestBoundsDigest(t *testing.T) {
	b := wire.Bounds{TimeoutMs: 1, AllowedHosts: nil}
	c := wire.Bounds{TimeoutMs: 1, AllowedHosts: []string{}}
	if BoundsDigest(b) != BoundsDigest(c) || len(BoundsDigest(b)) != 64 {
		t.Fatal("bounds digest is not over the canonical bounds")
	}
}

func TestVerifyNamesReorder(t *testing.T) {
	dir := t.TempDir()
	l := open(t, dir, Options{})
	appendN(t, l, 4)
	l.Close()
	path := filepath.Join(dir, File)
	data, _ := os.ReadFile(path)
	lines := strings.SplitAfter(string(data), "\n")
	lines[1], lines[2] = lines[2], lines[1]
	os.WriteFile(path, []byte(strings.Join(lines, "")), 0o600)
	_, err := Verify([]string{path})
	var b *Broken
	if !errors.As(err, &b) || b.Line != 2 || !strings.Contains(b.Why, "missing") {
		t.Fatalf("reordered: %v", err)
	}
}

// TestTwoWritersShareOneChain: two logs on one folder (a broker and
// `airlock mcp` on one data directory) append under the file's lock, each
// continuing from the other's last record, through rotations.
func TestTwoWritersShareOneChain(t *testing.T) {
	dir := t.TempDir()
	a := open(t, dir, Options{MaxFileBytes: 2000})
	b := open(t, dir, Options{MaxFileBytes: 2000, Fsync: FsyncAlways})
	var wg sync.WaitGroup
	for _, l := range []*Log{a, b, a, b} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 25 {
				if err := l.Append(Record{Kind: KindCall, Door: DoorV1, CallID: "x", Outcome: "ok"}); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	a.Close()
	b.Close()
	rep := verifyDir(t, dir)
	if rep.Records != 100 || rep.Files < 3 {
		t.Fatalf("report %+v", rep)
	}
}

// TestRenamedAwayFileIsNotWrittenTo: a file renamed away by someone else
// (not a rotation) takes no more receipts, lease or not: the next one
// goes to a new File.
func TestRenamedAwayFileIsNotWrittenTo(t *testing.T) {
	dir := t.TempDir()
	l := open(t, dir, Options{})
	appendN(t, l, 2)
	moved := filepath.Join(dir, "moved.jsonl")
	if err := os.Rename(filepath.Join(dir, File), moved); err != nil {
		t.Fatal(err)
	}
	appendN(t, l, 1)
	before, _ := os.ReadFile(moved)
	after, _ := os.ReadFile(filepath.Join(dir, File))
	if bytes.Count(before, []byte("\n")) != 2 || bytes.Count(after, []byte("\n")) != 1 {
		t.Fatalf("moved file:\n%s\nnew file:\n%s", before, after)
	}
	var r Record
	if err := json.Unmarshal(bytes.TrimSpace(after), &r); err != nil || r.Seq != 3 {
		t.Fatalf("the new file's record %s: %v", after, err)
	}
}
