//go:build wasip1

// Command notes is the bundled notes plugin: read, list and search the
// files of the operator's "notes" root, mounted read-only at /notes.
package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path"
	"sort"
	"strings"

	"github.com/airlock/airlock/plugins/sdk"
)

const (
	root       = "notes"
	maxMatches = 200
	// maxMatchText bounds one matching line in search results.
	maxMatchText = 1000
)

func init() {
	sdk.Handle("read_notes", readNotes)
	sdk.Handle("list_notes", listNotes)
	sdk.Handle("search_notes", searchNotes)
}

func main() { sdk.Main() }

// Failures the caller can act on are sdk.Errorf errors: the caller reads
// them as "tool error: <message>". Anything else (an unreadable root, a
// path the sandbox refuses) stays the generic exec-threw.
var errBadPath = sdk.Errorf("path must be relative to the notes root, without ..")

// notePath checks p and returns its guest path. The sandbox already keeps
// the tool inside the root; refusing absolute paths and .. here as well
// gives a clear failure instead of a surprising file.
func notePath(p string) (string, error) {
	if p == "" || strings.HasPrefix(p, "/") || strings.Contains(p, "\\") {
		return "", errBadPath
	}
	for _, seg := range strings.Split(p, "/") {
		if seg == ".." {
			return "", errBadPath
		}
	}
	return sdk.Root(root) + "/" + path.Clean(p), nil
}

func readNotes(args json.RawMessage) (any, error) {
	var in struct {
		Path string `json:"path"`
	}
	if err := json.Unmarshal(args, &in); err != nil {
		return nil, err
	}
	full, err := notePath(in.Path)
	if err != nil {
		return nil, err
	}
	text, err := os.ReadFile(full)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil, sdk.Errorf("no note %q", in.Path)
	case err != nil:
		if info, serr := os.Stat(full); serr == nil && info.IsDir() {
			return nil, sdk.Errorf("%q is a folder, not a note (list_notes lists the notes)", in.Path)
		}
		return nil, err
	}
	return map[string]string{"path": in.Path, "text": string(text)}, nil
}

func listNotes(json.RawMessage) (any, error) {
	paths, err := files()
	if err != nil {
		return nil, err
	}
	return map[string][]string{"paths": paths}, nil
}

// files lists every regular file under the root (following symlinks that
// stay inside it), relative to the root, sorted. Unreadable
// subdirectories are skipped rather than failing the whole listing.
func files() ([]string, error) {
	fsys := os.DirFS(sdk.Root(root))
	paths := []string{}
	err := fs.WalkDir(fsys, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if p == "." {
				return err
			}
			return nil
		}
		if d.IsDir() {
			return nil
		}
		if info, err := fs.Stat(fsys, p); err == nil && info.Mode().IsRegular() {
			paths = append(paths, p)
		}
		return nil
	})
	sort.Strings(paths)
	return paths, err
}

type match struct {
	Path string `json:"path"`
	Line int    `json:"line"`
	Text string `json:"text"`
}

func searchNotes(args json.RawMessage) (any, error) {
	var in struct {
		Query string `json:"query"`
	}
	if err := json.Unmarshal(args, &in); err != nil {
		return nil, err
	}
	if strings.TrimSpace(in.Query) == "" {
		return nil, sdk.Errorf("empty query: give some text to search for")
	}
	paths, err := files()
	if err != nil {
		return nil, err
	}
	query := strings.ToLower(in.Query)
	matches := []match{}
	for _, p := range paths {
		if matches, err = searchFile(p, query, matches); err != nil {
			return nil, err
		}
		if len(matches) >= maxMatches {
			break
		}
	}
	return map[string][]match{"matches": matches}, nil
}

// searchFile appends the lines of p containing query (already lower
// case), case-insensitively, up to maxMatches in all.
func searchFile(p, query string, matches []match) ([]match, error) {
	f, err := os.Open(sdk.Root(root) + "/" + p)
	if err != nil {
		return matches, nil // vanished or unreadable since the listing
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		if strings.Contains(strings.ToLower(line), query) {
			matches = append(matches, match{Path: p, Line: n, Text: clip(line)})
			if len(matches) >= maxMatches {
				break
			}
		}
	}
	return matches, nil
}

// clip shortens s to maxMatchText bytes on a rune boundary.
func clip(s string) string {
	if len(s) <= maxMatchText {
		return s
	}
	cut := maxMatchText
	for cut > 0 && !isRuneStart(s[cut]) {
		cut--
	}
	return s[:cut]
}

func isRuneStart(b byte) bool { return b&0xC0 != 0x80 }
