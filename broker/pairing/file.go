// Package pairing is the pairings file: which paired environments may
// connect to /channel, each by name and the SHA-256 digest of its bearer.
//
// The file is <data>/.pairings.json, mode 0600:
//
//	{"version":1,"pairings":[{"name":"laptop","sha256":"<hex>","created":"2026-11-29T06:00:00Z"}]}
//
// The bearer itself ("vbx_" + 256 random bits, URL-safe base64) is printed
// once by Add and never stored. Writers take an flock on a lock file beside
// it and replace the file atomically, so concurrent `pair add`s cannot lose
// each other and the broker never reads half a file. Every file is reached
// through the checked data root (internal/datadir): a link is never
// followed.
package pairing

import (
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"time"

	"github.com/airlock/airlock/config/datadir"
	"github.com/airlock/airlock/executors/wire"
)

// File names in the data directory.
const (
	FileName = ".pairings.json"
	lockName = ".pairings.lock"
)

// BearerPrefix starts every bearer, so a leaked one is recognisable.
const BearerPrefix = "vbx_"

// Digest is the SHA-256 of a bearer.
type Digest [sha256.Size]byte

// Pairing is one entry of the file.
type Pairing struct {
	Name    string `json:"name"`
	SHA256  string `json:"sha256"`
	Created string `json:"created"` // RFC 3339, UTC
}

type document struct {
	Version  int       `json:"version"`
	Pairings []Pairing `json:"pairings"`
}

var (
	namePattern = regexp.MustCompile(`^[a-z0-9][a-z0-9_-]{0,63}$`)
	hexPattern  = regexp.MustCompile(`^[0-9a-f]{64}$`)
)

// ValidName reports whether name may name a pairing. Names become file
// names (the remembered catalog) and executor labels, so the set is small.
func ValidName(name string) bool { return namePattern.MatchString(name) }

// Path is the pairings file of dataDir.
func Path(dataDir string) string { return filepath.Join(dataDir, FileName) }

// NewBearer returns a fresh bearer and its digest.
func NewBearer() (string, Digest) {
	var b [32]byte
	_, _ = rand.Read(b[:]) // never fails (crypto/rand)
	bearer := BearerPrefix + base64.RawURLEncoding.EncodeToString(b[:])
	return bearer, DigestOf(bearer)
}

// DigestOf is the SHA-256 of a presented bearer.
func DigestOf(bearer string) Digest { return sha256.Sum256([]byte(bearer)) }

// maxFileBytes bounds the pairings file: a name and a digest take about
// 150 bytes, so this holds tens of thousands of pairings, and a file
// planted or grown past it is refused rather than read whole.
const maxFileBytes = 4 << 20

// read loads the document from the data root; a missing file is an
// empty one. A file that group or others may read is refused, and so is
// a link (never followed) and any shape other than the documented one
// (strict keys, version 1, valid and unique names).
func read(root *os.Root) (document, error) {
	data, info, err := datadir.ReadFile(root, FileName, maxFileBytes)
	if errors.Is(err, fs.ErrNotExist) {
		return document{Version: 1}, nil
	}
	if err != nil {
		return document{}, err
	}
	if info.Mode().Perm()&0o077 != 0 {
		return document{}, ErrFileOpen
	}
	var doc document
	if err := wire.DecodeStrict(data, &doc); err != nil {
		return document{}, ErrFileInvalid
	}
	return doc, doc.check()
}

// readDir opens dataDir and loads its document.
func readDir(dataDir string) (document, error) {
	root, err := datadir.Open(dataDir)
	if err != nil {
		return document{}, err
	}
	defer root.Close()
	return read(root)
}

func (d document) check() error {
	if d.Version != 1 {
		return ErrFileInvalid
	}
	seen := map[string]bool{}
	for _, p := range d.Pairings {
		if !ValidName(p.Name) || !hexPattern.MatchString(p.SHA256) || seen[p.Name] {
			return ErrFileInvalid
		}
		if _, err := time.Parse(time.RFC3339, p.Created); err != nil {
			return ErrFileInvalid
		}
		seen[p.Name] = true
	}
	return nil
}

// List returns the pairings of dataDir sorted by name.
func List(dataDir string) (_ []Pairing, err error) {
	defer wrap(&err, "list")
	doc, err := readDir(dataDir)
	if err != nil {
		return nil, err
	}
	out := slices.Clone(doc.Pairings)
	slices.SortFunc(out, func(a, b Pairing) int { return cmpString(a.Name, b.Name) })
	return out, nil
}

// Add pairs a new environment called name and returns its bearer, which
// exists nowhere else: only its digest is written.
func Add(dataDir, name string, now time.Time) (bearer string, err error) {
	defer wrap(&err, "add")
	if !ValidName(name) {
		return "", ErrNameInvalid
	}
	err = update(dataDir, func(doc *document) error {
		for _, p := range doc.Pairings {
			if p.Name == name {
				return ErrExists
			}
		}
		var d Digest
		bearer, d = NewBearer()
		doc.Pairings = append(doc.Pairings, Pairing{Name: name, SHA256: hex.EncodeToString(d[:]), Created: now.UTC().Format(time.RFC3339)})
		return nil
	})
	if err != nil {
		return "", err
	}
	return bearer, nil
}

// Remove revokes the pairing called name and forgets its remembered
// catalog. A broker watching the file closes its live connection.
func Remove(dataDir, name string) (err error) {
	defer wrap(&err, "remove")
	if !ValidName(name) {
		return ErrNameInvalid
	}
	err = update(dataDir, func(doc *document) error {
		i := slices.IndexFunc(doc.Pairings, func(p Pairing) bool { return p.Name == name })
		if i < 0 {
			return ErrNotFound
		}
		doc.Pairings = slices.Delete(doc.Pairings, i, i+1)
		return nil
	})
	if err != nil {
		return err
	}
	return ForgetCatalog(dataDir, name)
}

// update applies change to the document under the lock and writes the
// result atomically, all inside the data root.
func update(dataDir string, change func(*document) error) error {
	root, err := datadir.Open(dataDir)
	if err != nil {
		return err
	}
	defer root.Close()
	unlock, err := lock(root, lockName)
	if err != nil {
		return err
	}
	defer unlock()
	doc, err := read(root)
	if err != nil {
		return err
	}
	if err := change(&doc); err != nil {
		return err
	}
	data, err := marshal(doc)
	if err != nil {
		return err
	}
	return datadir.WriteFileAtomic(root, FileName, data)
}

// Set is a loaded pairings file, as the broker checks bearers against it.
type Set struct {
	entries []entry
}

type entry struct {
	name   string
	digest Digest
}

// Load reads the pairings of dataDir. A missing file is an empty set.
func Load(dataDir string) (_ *Set, err error) {
	defer wrap(&err, "load")
	doc, err := readDir(dataDir)
	if err != nil {
		return nil, err
	}
	s := &Set{}
	for _, p := range doc.Pairings {
		var d Digest
		_, _ = hex.Decode(d[:], []byte(p.SHA256)) // checked by read
		s.entries = append(s.entries, entry{name: p.Name, digest: d})
	}
	return s, nil
}

// Empty is a set that pairs nothing: what the broker uses when the file
// cannot be read, so a damaged file fails closed.
func Empty() *Set { return &Set{} }

// Match finds the pairing whose digest is the presented bearer's. It
// hashes the bearer and compares the digest with every stored digest in
// constant time, without stopping at a match, so neither the position nor
// the existence of a match shows in the time taken.
func (s *Set) Match(bearer string) (name string, digest Digest, ok bool) {
	d := DigestOf(bearer)
	found, idx := 0, 0
	for i, e := range s.entries {
		eq := subtle.ConstantTimeCompare(d[:], e.digest[:])
		idx = subtle.ConstantTimeSelect(eq, i, idx)
		found |= eq
	}
	if found == 0 {
		return "", Digest{}, false
	}
	return s.entries[idx].name, d, true
}

// Has reports whether name is still paired with digest (a pairing removed
// and added again under the same name has a new digest).
func (s *Set) Has(name string, digest Digest) bool {
	for _, e := range s.entries {
		if e.name == name && subtle.ConstantTimeCompare(e.digest[:], digest[:]) == 1 {
			return true
		}
	}
	return false
}

// Digest is the bearer digest paired under name.
func (s *Set) Digest(name string) (Digest, bool) {
	for _, e := range s.entries {
		if e.name == name {
			return e.digest, true
		}
	}
	return Digest{}, false
}

// Names lists the paired names in ascending byte order.
func (s *Set) Names() []string {
	out := make([]string, len(s.entries))
	for i, e := range s.entries {
		out[i] = e.name
	}
	slices.Sort(out)
	return out
}

// Len is the number of pairings.
func (s *Set) Len() int { return len(s.entries) }

func cmpString(a, b string) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// wrap names the operation on an exported entry point's error, once; the
// package's own sentinels already say what went wrong.
func wrap(err *error, op string) {
	if *err == nil {
		return
	}
	for _, s := range []error{ErrNameInvalid, ErrExists, ErrNotFound, ErrFileOpen, ErrFileInvalid} {
		if *err == s {
			return
		}
	}
	*err = fmt.Errorf("pairing: %s: %w", op, *err)
}

// marshal encodes the document as the file holds it.
func marshal(doc document) ([]byte, error) {
	if doc.Pairings == nil {
		doc.Pairings = []Pairing{}
	}
	data, err := json.MarshalIndent(doc, "", "  ")
	if err != nil {
		return nil, err
	}
	return append(data, '\n'), nil
}
