package jsclient_test

import (
	"bytes"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"
)

// TestFreshBuildMatchesDist rebuilds the package with the pinned
// TypeScript compiler into a temporary folder and fails on any difference
// from the committed dist (a file changed, missing or extra), so the
// built JavaScript the broker embeds is what src builds to, as
// plugins/bundled's TestFreshBuildsMatchCommitted does for the bundled
// modules.
func TestFreshBuildMatchesDist(t *testing.T) {
	nodeBin := nodeOrSkip(t)
	out := t.TempDir()
	cmd := exec.Command(nodeBin, filepath.Join("node_modules", "typescript", "bin", "tsc"), "-p", "tsconfig.json", "--outDir", out)
	if msg, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("tsc: %v\n%s", err, tail(string(msg), 4000))
	}
	fresh, committed := tree(t, out), tree(t, "dist")
	for _, name := range union(fresh, committed) {
		f, inFresh := fresh[name]
		c, inCommitted := committed[name]
		switch {
		case !inCommitted:
			t.Errorf("dist/%s is not committed: run npm run build in broker/jsclient", name)
		case !inFresh:
			t.Errorf("dist/%s is not built from src any more: delete it", name)
		case !bytes.Equal(f, c):
			t.Errorf("dist/%s differs from a fresh build: run npm run build in broker/jsclient", name)
		}
	}
}

// tree reads every file under dir by its slash-separated relative path.
func tree(t *testing.T, dir string) map[string][]byte {
	files := map[string][]byte{}
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, path)
		files[filepath.ToSlash(rel)] = data
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return files
}

func union(a, b map[string][]byte) []string {
	var names []string
	for n := range a {
		names = append(names, n)
	}
	for n := range b {
		if _, ok := a[n]; !ok {
			names = append(names, n)
		}
	}
	slices.Sort(names)
	return names
}

// TestTypesFitUsers type-checks test/types/check.ts, code as a user of the
// package writes it, against the committed .d.ts: the door must take a
// socket from ws in Node and the DOM's WebSocket alike.
func TestTypesFitUsers(t *testing.T) {
	nodeBin := nodeOrSkip(t)
	cmd := exec.Command(nodeBin, filepath.Join("node_modules", "typescript", "bin", "tsc"), "-p", filepath.Join("test", "types", "tsconfig.json"))
	if msg, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("tsc: %v\n%s", err, tail(string(msg), 4000))
	}
}
