package broker

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/scanner"
	"go/token"
	"io/fs"
	"os"
	"path"
	"regexp"
	"strings"
	"testing"
	"testing/fstest"
	"unicode"
)

// TestReferencesResolve holds every Go comment, Markdown file and CI
// script of the repository to its references: a protocol citation names a
// section of broker/PROTOCOL.md, a cited .md file exists, a relative
// Markdown link (and its #anchor) exists, a cited RATIONALE.md entry is
// a heading of the file it names (the top-level one or an area's, see
// rationaleFiles), and a Go name written pkg.Name, where pkg is the name
// of one of the module's packages, is declared at the top level of such
// a package. Citation forms are stated at the top of
// broker/PROTOCOL.md and in CONTRIBUTING.md; see
// RATIONALE.md, "Why does the contract live in broker/PROTOCOL.md, cited
// by section number?".
func TestReferencesResolve(t *testing.T) {
	fsys := os.DirFS("..")
	idx, err := newRefIndex(fsys)
	if err != nil {
		t.Fatal(err)
	}
	files, err := refFiles(fsys)
	if err != nil {
		t.Fatal(err)
	}
	if len(files) < 100 {
		t.Fatalf("found %d files to check; is the repository root at ..?", len(files))
	}
	for _, name := range files {
		src, err := fs.ReadFile(fsys, name)
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range idx.check(name, src) {
			t.Error(p)
		}
	}
}

// TestReferencesCatchDangling proves the checker fails: each text holds
// one reference that does not resolve (or is not in the citation form),
// and must be reported on its line; the valid texts must pass.
func TestReferencesCatchDangling(t *testing.T) {
	fsys := fstest.MapFS{
		"broker/PROTOCOL.md":        {Data: []byte("# P\n\n## 1. One\n\n### 1.1 Sub\n\n## 2. Two `x`\n")},
		"RATIONALE.md":              {Data: []byte("# Rationale\n\n## Group\n\n### Why `this` way?\n")},
		"broker/relay/RATIONALE.md": {Data: []byte("# Rationale: the relay\n\n### Why a hub?\n")},
		"README.md":                 {Data: []byte("# Readme\n\n## Development\n")},
		"plugins/sdk/ABI.md":        {Data: []byte("# ABI\n")},
		"plugins/sdk/sdk.go":        {Data: []byte("package sdk\n")},
		"broker/relay/hub.go":       {Data: []byte("package relay\n\ntype Hub struct{}\n")},
		"broker/relay/x_test.go":    {Data: []byte("package relay\n\nfunc Helper() {}\n")},
	}
	idx, err := newRefIndex(fsys)
	if err != nil {
		t.Fatal(err)
	}
	bad := []struct{ name, src, want string }{
		{"a.go", "package a\n\n// PROTOCOL section 3 says so.\n", "a.go:3: PROTOCOL section 3"},
		{"a.go", "package a\n\n// PROTOCOL sections 1 and\n// 1.2 say so.\n", "a.go:3: PROTOCOL section 1.2"},
		{"a.go", "package a\n\n// PROTOCOL sections 1–4.\n", "a.go:3: PROTOCOL section 4"},
		{"a.go", "package a\n\nvar x = 1 // in PROTOCOL's order\n", "a.go:3: cite the protocol"},
		{"a.go", "package a\n\n/* Keep it in step with\n   DESIGN.md. */\n", "a.go:4: DESIGN.md"},
		{"a.go", "package a\n\n// See ABI.md.\n", "a.go:3: ABI.md"},
		{"a.go", "package a\n\n// See RATIONALE-notes.md.\n", "a.go:3: RATIONALE-notes.md"},
		{"a.go", "package a\n\n// See RATIONALE, \"Why this way?\".\n", "a.go:3: cite RATIONALE.md"},
		{"a.go", "package a\n\n// See RATIONALE.md, \"Why that\n// way?\".\n", `a.go:3: RATIONALE.md has no heading "Why that way?"`},
		{"d/x.md", "# X\n\nRead `notes.md` first.\n", "d/x.md:3: notes.md"},
		{"d/x.md", "# X\n\nsee [there](../missing/y.md)\n", "d/x.md:3: missing/y.md"},
		{"d/x.md", "# X\n\nsee [there](../README.md#deployment)\n", "d/x.md:3: README.md#deployment"},
		{"d/x.md", "# X\n\n[up]: ../nothere\n", "d/x.md:3: nothere"},
		{"d/x.md", "# X\n\n## Y\n\nsee [below](#z)\n", "d/x.md:5: #z"},
		{"d/x.md", "# X\n\n(RATIONALE.md, \"Why not?\")\n", `d/x.md:3: RATIONALE.md has no heading "Why not?"`},
		{"a.go", "package a\n\n// Unlike relay.Door, it\n", "a.go:3: relay.Door"},
		{"a.go", "package a\n\n// See RATIONALE.md, \"Why a hub?\".\n", `a.go:3: RATIONALE.md has no heading "Why a hub?"`},
		{"broker/x.go", "package broker\n\n// See RATIONALE.md, \"Why a hub?\".\n", `broker/x.go:3: RATIONALE.md has no heading "Why a hub?"`},
		{"a.go", "package a\n\n// See broker/relay/RATIONALE.md, \"Why this way?\".\n", `a.go:3: broker/relay/RATIONALE.md has no heading "Why this way?"`},
		{"d/x.md", "# X\n\n(broker/relay/RATIONALE.md, \"Why not?\")\n", `d/x.md:3: broker/relay/RATIONALE.md has no heading "Why not?"`},
		{"d/x.md", "# X\n\nThe hub (`relay.Helper`).\n", "d/x.md:3: relay.Helper"},
	}
	for _, c := range bad {
		ps := idx.check(c.name, []byte(c.src))
		if len(ps) != 1 || !strings.HasPrefix(ps[0], c.want[:strings.Index(c.want, " ")]) || !strings.Contains(ps[0], c.want[strings.Index(c.want, " ")+1:]) {
			t.Errorf("check(%q) = %q, want one problem like %q", c.src, ps, c.want)
		}
	}
	good := []struct{ name, src string }{
		{"a.go", "package a\n\n// PROTOCOL section 1, PROTOCOL sections 1.1 and 2,\n// PROTOCOL section\n// 2: fine.\n"},
		{"a.go", "package a\n\nvar s = \"PROTOCOL's DESIGN.md\" // strings are not comments\n"},
		{"d/a.go", "package a\n\n// See RATIONALE.md, \"Why this\n// way?\"; plugins/sdk/ABI.md; ../README.md; README.md.\n"},
		{"plugins/sdk/x.go", "package sdk\n\n// See ABI.md.\n"},
		{"a.go", "package a\n\n// Cite PROTOCOL section N, or RATIONALE.md, \"Why …?\".\n"},
		{"a.go", "package a\n\n// relay.Hub.Join, not http.Server or relay.hub.\n"},
		{"broker/relay/baseline/c.go", "package baseline\n\n// RATIONALE.md, \"Why a hub?\" and RATIONALE.md, \"Why this way?\".\n"},
		{"a.go", "package a\n\n// See broker/relay/RATIONALE.md, \"Why a\n// hub?\".\n"},
		{"broker/x.go", "package broker\n\n// See relay/RATIONALE.md, \"Why a hub?\".\n"},
		{"d/x.md", "# X\n\n[e](../broker/relay/RATIONALE.md#why-a-hub) (`broker/relay/RATIONALE.md`, \"Why a hub?\")\n"},
		{"d/x.md", "# X\n\n## Y `z`\n\n[a](#y-z) [b](../RATIONALE.md#why-this-way) [c](https://example.com/n.md)\n" +
			"`{\"path\":\"welcome.md\"}` and `plugins/sdk/ABI.md`, [d](../broker/PROTOCOL.md#2-two-x)\n" +
			"```\n[e](nothere.md) PROTOCOL's DESIGN.md\n```\n"},
	}
	for _, c := range good {
		if ps := idx.check(c.name, []byte(c.src)); len(ps) != 0 {
			t.Errorf("check(%q) = %q, want none", c.src, ps)
		}
	}
}

// protocolDoc is the protocol as the repository states it; rationaleDoc
// is the name of the top-level file of decisions and of each area's.
const (
	protocolDoc  = "broker/PROTOCOL.md"
	rationaleDoc = "RATIONALE.md"
)

// refIndex is what references are resolved against.
type refIndex struct {
	fsys      fs.FS
	sections  map[string]bool            // "4", "4.7": numbered headings of protocolDoc
	rationale map[string]map[string]bool // each RATIONALE.md file → its headings, normalized
	decls     map[string]map[string]bool // package name → top-level names
	anchors   map[string]map[string]bool
}

func newRefIndex(fsys fs.FS) (*refIndex, error) {
	idx := &refIndex{fsys: fsys, sections: map[string]bool{}, rationale: map[string]map[string]bool{},
		decls: map[string]map[string]bool{}, anchors: map[string]map[string]bool{}}
	proto, err := fs.ReadFile(fsys, protocolDoc)
	if err != nil {
		return nil, err
	}
	for _, h := range headings(proto) {
		if m := sectionHeading.FindStringSubmatch(h); m != nil {
			idx.sections[m[1]] = true
		}
	}
	if err := idx.readRationale(); err != nil {
		return nil, err
	}
	return idx, idx.readDecls()
}

// readRationale records the headings of the top-level RATIONALE.md and
// of every area's, beside the area's code.
func (idx *refIndex) readRationale() error {
	files, err := refFiles(idx.fsys)
	if err != nil {
		return err
	}
	if _, err := fs.Stat(idx.fsys, rationaleDoc); err != nil {
		return err
	}
	for _, name := range files {
		if path.Base(name) != rationaleDoc {
			continue
		}
		src, err := fs.ReadFile(idx.fsys, name)
		if err != nil {
			return err
		}
		hs := map[string]bool{}
		for _, h := range headings(src) {
			hs[normalize(h)] = true
		}
		idx.rationale[name] = hs
	}
	return nil
}

// rationaleFiles returns the files a RATIONALE.md citation in file name
// may mean. A bare "RATIONALE.md" is the nearest area's: one in the
// citing file's folder or a folder above it, up to the top-level one. A
// path, as in broker/channel/RATIONALE.md, names one file, from the
// citing file's folder or from the repository root, as any cited file.
func rationaleFiles(name, dir string) []string {
	if dir == "" {
		var files []string
		for d := path.Dir(name); ; d = path.Dir(d) {
			files = append(files, path.Join(d, rationaleDoc))
			if d == "." || d == "/" {
				return files
			}
		}
	}
	return []string{path.Join(path.Dir(name), dir, rationaleDoc), path.Join(dir, rationaleDoc)}
}

// readDecls records the top-level names of every package of the module,
// by package name; test files are left out, since no other package can
// use their names.
func (idx *refIndex) readDecls() error {
	files, err := refFiles(idx.fsys)
	if err != nil {
		return err
	}
	fset := token.NewFileSet()
	for _, name := range files {
		if path.Ext(name) != ".go" || strings.HasSuffix(name, "_test.go") {
			continue
		}
		src, err := fs.ReadFile(idx.fsys, name)
		if err != nil {
			return err
		}
		f, err := parser.ParseFile(fset, name, src, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		names := idx.decls[f.Name.Name]
		if names == nil {
			names = map[string]bool{}
			idx.decls[f.Name.Name] = names
		}
		for _, n := range topLevel(f) {
			names[n] = true
		}
	}
	return nil
}

// topLevel returns the names f declares at the top level, methods left
// out.
func topLevel(f *ast.File) []string {
	var names []string
	for _, d := range f.Decls {
		switch d := d.(type) {
		case *ast.FuncDecl:
			if d.Recv == nil {
				names = append(names, d.Name.Name)
			}
		case *ast.GenDecl:
			for _, s := range d.Specs {
				switch s := s.(type) {
				case *ast.TypeSpec:
					names = append(names, s.Name.Name)
				case *ast.ValueSpec:
					for _, n := range s.Names {
						names = append(names, n.Name)
					}
				}
			}
		}
	}
	return names
}

var (
	headingLine    = regexp.MustCompile(`(?m)^#{1,6}[ \t]+(.+?)[ \t#]*$`)
	sectionHeading = regexp.MustCompile(`^(\d+(?:\.\d+)*)\.?\s`)

	protoWord = regexp.MustCompile(`\bPROTOCOL\b`)
	// protoCite is what must follow that word: as in "PROTOCOL section
	// 4", "PROTOCOL sections 4 and 6", "PROTOCOL sections 2–4" or
	// "PROTOCOL section 4.7"; N and M stand for numbers where the form
	// itself is described.
	protoCite = regexp.MustCompile(`^\s+sections?\s+(` + sectionNo.String() + `(?:(?:\s*[,–-]\s*|\s+(?:and|or|to)\s+)` + sectionNo.String() + `)*)\b`)
	sectionNo = regexp.MustCompile(`(?:\d+(?:\.\d+)*|N(?:\.M)?|M)`)

	rationaleWord = regexp.MustCompile(`\bRATIONALE\b`)
	// rationaleDir is the folder a citation may name before the word,
	// as in broker/channel/RATIONALE.md.
	rationaleDir = regexp.MustCompile(`(?:[\w.-]+/)+$`)
	// rationaleCite is what may follow that word to cite one entry: as
	// in executors/RATIONALE.md, "Why refuse duplicate keys at any depth?".
	rationaleCite = regexp.MustCompile("^\\.md`?,?\\s+[\"“]([^\"”]+)[\"”]")

	// goName is a qualified Go name, as in wire.ParseAnswer.
	goName = regexp.MustCompile(`\b([a-z][a-z0-9]*)\.([A-Z]\w*)`)

	mdFile   = regexp.MustCompile(`[\w./-]*[\w-]\.md\b`)
	codeSpan = regexp.MustCompile("`[^`\n]+`")
	link     = regexp.MustCompile(`\]\(([^)\s]+)(?:\s+"[^"]*")?\)`)
	refLink  = regexp.MustCompile(`(?m)^[ \t]*\[[^\]\n]+\]:[ \t]+(\S+)`)
	scheme   = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9+.-]*:`)
)

// check returns the references of one file that do not resolve, each as
// "file:line: what".
func (idx *refIndex) check(name string, src []byte) []string {
	f := &refFile{name: name, src: src, text: prose(name, src), md: path.Ext(name) == ".md"}
	idx.checkProtocol(f)
	idx.checkRationale(f)
	idx.checkGoNames(f)
	idx.checkFiles(f)
	if f.md {
		idx.checkLinks(f)
	}
	return f.problems
}

// refFile is one file being checked: its prose (see prose) and the
// problems found so far.
type refFile struct {
	name     string
	src      []byte
	text     string
	md       bool
	problems []string
}

// bad records a problem at byte offset off of f.text.
func (f *refFile) bad(off int, format string, args ...any) {
	line := 1 + strings.Count(f.text[:off], "\n")
	f.problems = append(f.problems, fmt.Sprintf("%s:%d: %s", f.name, line, fmt.Sprintf(format, args...)))
}

// codeSpans returns the inline code spans of a Markdown file, backticks
// included.
func (f *refFile) codeSpans() [][]int {
	if !f.md {
		return nil
	}
	return codeSpan.FindAllStringIndex(f.text, -1)
}

func (idx *refIndex) checkProtocol(f *refFile) {
	for _, m := range protoWord.FindAllStringIndex(f.text, -1) {
		rest := f.text[m[1]:]
		if strings.HasPrefix(rest, ".md") {
			continue // a file reference, see checkFiles
		}
		c := protoCite.FindStringSubmatch(rest)
		if c == nil {
			f.bad(m[0], "cite the protocol as \"PROTOCOL section N\" (%s)", protocolDoc)
			continue
		}
		for _, n := range sectionNo.FindAllString(c[1], -1) {
			if !idx.sections[n] && n[0] >= '0' && n[0] <= '9' {
				f.bad(m[0], "PROTOCOL section %s does not exist in %s", n, protocolDoc)
			}
		}
	}
}

func (idx *refIndex) checkRationale(f *refFile) {
	for _, m := range rationaleWord.FindAllStringIndex(f.text, -1) {
		rest := f.text[m[1]:]
		switch c := rationaleCite.FindStringSubmatch(rest); {
		case strings.HasPrefix(rest, "-"):
			// another file's name, see checkFiles
		case !strings.HasPrefix(rest, ".md"):
			f.bad(m[0], "cite RATIONALE.md (an entry as RATIONALE.md, \"Why …?\")")
		case c != nil && !strings.Contains(c[1], "…"):
			dir := rationaleDir.FindString(f.text[:m[0]])
			if !idx.hasRationale(f.name, dir, normalize(c[1])) {
				f.bad(m[0], "%sRATIONALE.md has no heading %q", dir, normalize(c[1]))
			}
		}
	}
}

// hasRationale reports whether a RATIONALE.md file that a citation in
// file name may mean (see rationaleFiles) has heading h.
func (idx *refIndex) hasRationale(name, dir, h string) bool {
	for _, file := range rationaleFiles(name, dir) {
		if idx.rationale[path.Clean(file)][h] {
			return true
		}
	}
	return false
}

func (idx *refIndex) checkGoNames(f *refFile) {
	for _, m := range goName.FindAllStringSubmatchIndex(f.text, -1) {
		pkg, id := f.text[m[2]:m[3]], f.text[m[4]:m[5]]
		if names, ok := idx.decls[pkg]; ok && !names[id] {
			f.bad(m[0], "%s.%s: no package named %s declares %s", pkg, id, pkg, id)
		}
	}
}

// checkFiles resolves every name of a .md file, except in JSON strings,
// URLs, link targets (see checkLinks) and code spans that hold more than
// the name.
func (idx *refIndex) checkFiles(f *refFile) {
	spans := f.codeSpans()
	for _, m := range mdFile.FindAllStringIndex(f.text, -1) {
		if m[0] > 0 && strings.ContainsRune(`":`, rune(f.text[m[0]-1])) {
			continue
		}
		if f.md && m[0] >= 2 && f.text[m[0]-2:m[0]] == "](" {
			continue
		}
		if s := enclosing(spans, m); s != nil && (s[0] != m[0]-1 || s[1] != m[1]+1) {
			continue
		}
		if ref := f.text[m[0]:m[1]]; !idx.exists(f.name, ref) {
			f.bad(m[0], "%s does not exist (from %s, or from the repository root)", ref, path.Dir(f.name))
		}
	}
}

// checkLinks resolves the inline and reference links of a Markdown file,
// outside code.
func (idx *refIndex) checkLinks(f *refFile) {
	plain := []byte(f.text)
	for _, s := range f.codeSpans() {
		for i := s[0]; i < s[1]; i++ {
			plain[i] = ' '
		}
	}
	for _, re := range []*regexp.Regexp{link, refLink} {
		for _, m := range re.FindAllSubmatchIndex(plain, -1) {
			if why := idx.checkLink(f.name, f.src, string(plain[m[2]:m[3]])); why != "" {
				f.bad(m[2], "%s", why)
			}
		}
	}
}

// checkLink resolves one Markdown link target of file name, whose text
// is src.
func (idx *refIndex) checkLink(name string, src []byte, target string) string {
	if scheme.MatchString(target) {
		return ""
	}
	p, frag, _ := strings.Cut(target, "#")
	file := name
	if p != "" {
		file = path.Join(path.Dir(name), p)
		if !fs.ValidPath(file) {
			return fmt.Sprintf("link %s leaves the repository", target)
		}
		if _, err := fs.Stat(idx.fsys, file); err != nil {
			return fmt.Sprintf("link %s: %s does not exist", target, file)
		}
	}
	anchors := idx.anchorsOf
	if p == "" {
		anchors = func(string) map[string]bool { return anchorsIn(src) }
	}
	if frag != "" && strings.HasSuffix(file, ".md") && !anchors(file)[frag] {
		return fmt.Sprintf("link %s: %s has no heading #%s", target, file, frag)
	}
	return ""
}

// exists reports whether ref, a path cited in file name, names a file
// beside name or from the repository root.
func (idx *refIndex) exists(name, ref string) bool {
	for _, p := range []string{path.Join(path.Dir(name), ref), path.Clean(ref)} {
		if fs.ValidPath(p) {
			if _, err := fs.Stat(idx.fsys, p); err == nil {
				return true
			}
		}
	}
	return false
}

// anchorsOf returns the anchors of a Markdown file of the repository.
func (idx *refIndex) anchorsOf(file string) map[string]bool {
	if a, ok := idx.anchors[file]; ok {
		return a
	}
	src, _ := fs.ReadFile(idx.fsys, file)
	idx.anchors[file] = anchorsIn(src)
	return idx.anchors[file]
}

// anchorsIn returns the anchors GitHub gives the headings of a Markdown
// text: lower case, punctuation dropped, spaces to hyphens, "-1", "-2"…
// on repeats.
func anchorsIn(src []byte) map[string]bool {
	a, seen := map[string]bool{}, map[string]int{}
	for _, h := range headings(src) {
		s := slug(h)
		if n := seen[s]; n > 0 {
			a[fmt.Sprintf("%s-%d", s, n)] = true
		} else {
			a[s] = true
		}
		seen[s]++
	}
	return a
}

func slug(h string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(h) {
		switch {
		case unicode.IsLetter(r), unicode.IsDigit(r), r == '-', r == '_':
			b.WriteRune(r)
		case r == ' ':
			b.WriteByte('-')
		}
	}
	return b.String()
}

// headings returns the ATX headings of a Markdown file, outside code
// blocks.
func headings(src []byte) []string {
	var hs []string
	for _, m := range headingLine.FindAllStringSubmatch(prose(".md", src), -1) {
		hs = append(hs, m[1])
	}
	return hs
}

// normalize makes a heading comparable with a citation of it that was
// wrapped over lines: no backticks, single spaces.
func normalize(s string) string {
	return strings.Join(strings.Fields(strings.ReplaceAll(s, "`", "")), " ")
}

// enclosing returns the span holding m, if any.
func enclosing(spans [][]int, m []int) []int {
	for _, s := range spans {
		if s[0] <= m[0] && m[1] <= s[1] {
			return s
		}
	}
	return nil
}

// prose returns the text of a file that is written for readers, line for
// line: a Go file's comments (without their markers), a Markdown file
// without its fenced code blocks, any other file whole.
func prose(name string, src []byte) string {
	lines := strings.Split(string(src), "\n")
	switch path.Ext(name) {
	case ".go":
		out := make([]string, len(lines))
		var s scanner.Scanner
		fset := token.NewFileSet()
		s.Init(fset.AddFile(name, -1, len(src)), src, nil, scanner.ScanComments)
		for {
			pos, tok, lit := s.Scan()
			if tok == token.EOF {
				break
			}
			if tok != token.COMMENT {
				continue
			}
			line := fset.Position(pos).Line - 1
			lit = strings.TrimSuffix(strings.TrimPrefix(strings.TrimPrefix(lit, "//"), "/*"), "*/")
			for i, l := range strings.Split(lit, "\n") {
				out[line+i] += " " + l
			}
		}
		return strings.Join(out, "\n")
	case ".md":
		fence := ""
		for i, l := range lines {
			t := strings.TrimSpace(l)
			switch {
			case fence == "" && (strings.HasPrefix(t, "```") || strings.HasPrefix(t, "~~~")):
				fence, lines[i] = t[:3], ""
			case fence != "":
				if strings.HasPrefix(t, fence) {
					fence = ""
				}
				lines[i] = ""
			}
		}
	}
	return strings.Join(lines, "\n")
}

// refFiles lists the files to check: Go and Markdown files, and CI
// scripts, outside hidden folders.
func refFiles(fsys fs.FS) ([]string, error) {
	var files []string
	err := fs.WalkDir(fsys, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if p != "." && strings.HasPrefix(d.Name(), ".") && d.Name() != ".ci" || d.Name() == "node_modules" {
				return fs.SkipDir
			}
			return nil
		}
		if ext := path.Ext(p); ext == ".go" || ext == ".md" || strings.HasPrefix(p, ".ci/") {
			files = append(files, p)
		}
		return nil
	})
	return files, err
}
