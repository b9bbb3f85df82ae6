package wire

import (
	"bytes"
	"encoding/json"
	"sync"
	"unicode"
	"unicode/utf8"
)

// The strict walk: the one place that decides whether a JSON document is
// acceptable at all, before anything reads a value from it. Every JSON
// object the broker accepts passes it (call and answer envelopes, channel
// frames, plugin.json, the pairings file, mint and bootstrap bodies, relay
// frames), so that no two readers (the broker, a guest, a client) can take
// different values from the same bytes. See RATIONALE.md, "Why refuse
// duplicate keys at any depth?" and "Why are case-folded duplicates
// duplicates?".
//
// A document passes when it is exactly one JSON value (RFC 8259, with
// insignificant white space around it and nothing after it), in valid
// UTF-8, nested at most a given depth, and no object in it, at any depth,
// holds two keys that are equal under simple case folding.
// The fold is Fold's; clients that mirror this rule (the JavaScript
// client's wire part) must implement exactly that.

// MaxDepth bounds nesting (objects and arrays) in envelopes, channel
// frames and descriptors, so a hostile document cannot make the walk or a
// later decoder recurse without limit.
const MaxDepth = 128

// smallObject is the number of keys up to which an object's keys are
// compared pairwise (by fold hash, then EqualFold); past it they go into a
// map of folded keys, so a hostile object with many keys costs linear
// time.
const smallObject = 16

// Walk checks data in full: one JSON value, valid UTF-8, at most
// maxDepth nested containers, no two keys of an object equal under
// folding (Fold). The error is nil or one of ErrNotJSON, ErrNotUTF8,
// ErrTrailingData, ErrTooDeep and ErrDuplicateKey; a document that is
// not JSON is reported so even when it also holds a duplicate key.
func Walk(data []byte, maxDepth int) error {
	w := getWalker(data, maxDepth, false)
	defer putWalker(w)
	return w.document()
}

// Members walks data (Walk with MaxDepth) and splits it, which must be
// one JSON object, into its top-level members; a value that is not an
// object is ErrNotObject.
func Members(data []byte) (map[string]json.RawMessage, error) {
	return MembersDepth(data, MaxDepth)
}

// MembersDepth is Members with another depth bound (relay frames carry
// deeper client state than envelopes do).
func MembersDepth(data []byte, maxDepth int) (map[string]json.RawMessage, error) {
	return MembersInterned(data, maxDepth, nil)
}

// MembersInterned is MembersDepth that takes each key found in names
// from there instead of allocating it: a caller that walks many small
// frames with the same few keys (the relay) saves an allocation per key.
// names maps each key to itself and must not change; it affects
// allocation only, never the result.
func MembersInterned(data []byte, maxDepth int, names map[string]string) (map[string]json.RawMessage, error) {
	w := getWalker(data, maxDepth, true)
	defer putWalker(w)
	if err := w.document(); err != nil {
		return nil, err
	}
	if !w.isObject {
		return nil, ErrNotObject
	}
	m := make(map[string]json.RawMessage, len(w.top))
	for _, e := range w.top {
		text := w.keyText(e.key)
		k, ok := names[string(text)] // no allocation for the lookup
		if !ok {
			k = string(text)
		}
		m[k] = json.RawMessage(data[e.start:e.end])
	}
	return m, nil
}

// EachMember walks data (Walk with maxDepth), which must be one JSON
// object, and then calls fn with each top-level member in document order,
// without building a map. key is valid only during the call.
func EachMember(data []byte, maxDepth int, fn func(key []byte, value json.RawMessage)) error {
	return walkMembers(data, maxDepth, false, "", fn, nil)
}

// EachMemberOf is EachMember that, in the same single walk, also splits
// the value of the top-level member named inner (after unescaping, as fn
// sees it) when that value is an object: once the whole document has
// passed, fn is called with each top-level member, then innerFn with each
// member of that object, both in document order; innerFn is not called
// when there is no such member or its value is not an object. The split
// is exactly what EachMember of the value's own bytes would give: the
// value passed the walk as part of the document, which checks it in
// every way a walk of its own would (one level deeper, so its bound is
// one less). A caller that reads a member of a member (the relay's
// payload) thus walks each byte once. key is valid only during the call.
func EachMemberOf(data []byte, maxDepth int, inner string, fn, innerFn func(key []byte, value json.RawMessage)) error {
	return walkMembers(data, maxDepth, true, inner, fn, innerFn)
}

// walkMembers is EachMember, and EachMemberOf when split is set.
func walkMembers(data []byte, maxDepth int, split bool, inner string, fn, innerFn func(key []byte, value json.RawMessage)) error {
	w := getWalker(data, maxDepth, true)
	defer putWalker(w)
	w.inner, w.split = inner, split
	if err := w.document(); err != nil {
		return err
	}
	if !w.isObject {
		return ErrNotObject
	}
	for _, e := range w.top {
		fn(w.keyText(e.key), json.RawMessage(data[e.start:e.end]))
	}
	for _, e := range w.nested {
		innerFn(w.keyText(e.key), json.RawMessage(data[e.start:e.end]))
	}
	return nil
}

// walker is one pass over a document. keys holds the keys of every open
// object, innermost last; an object's keys are dropped when it closes.
type walker struct {
	data     []byte
	pos      int
	depth    int
	maxDepth int
	keys     []key
	dup      bool   // a duplicate was seen; reported if the rest is JSON
	dupKey   key    // the first duplicate, for Locate
	why      string // what the walk expected where it stopped, for Locate
	collect  bool   // record the top-level members
	isObject bool   // the document is an object
	top      []member

	// EachMemberOf: the members of the object that is the value of the
	// top-level member named inner go into nested.
	split   bool
	inner   string
	inInner bool // walking that value
	nested  []member
}

// walkers are reused so that a walk allocates nothing for keys without
// escapes; a walker that grew past maxPooledKeys is not kept, so one huge
// document does not pin its memory.
var walkers = sync.Pool{New: func() any { return new(walker) }}

const maxPooledKeys = 1024

func getWalker(data []byte, maxDepth int, collect bool) *walker {
	w := walkers.Get().(*walker)
	*w = walker{data: data, maxDepth: maxDepth, collect: collect, keys: w.keys[:0], top: w.top[:0], nested: w.nested[:0]}
	return w
}

func putWalker(w *walker) {
	if cap(w.keys) > maxPooledKeys || cap(w.top) > maxPooledKeys || cap(w.nested) > maxPooledKeys {
		return
	}
	clear(w.keys[:cap(w.keys)])
	clear(w.top[:cap(w.top)])
	clear(w.nested[:cap(w.nested)])
	*w = walker{keys: w.keys[:0], top: w.top[:0], nested: w.nested[:0]}
	walkers.Put(w)
}

// key is one object key: its span in data (quotes excluded), its text
// when it held escapes, and the hash of its fold.
type key struct {
	start, end int
	text       []byte // unescaped, only when the key held a backslash
	hash       uint64
}

// member is a top-level member: its key and the span of its value.
type member struct {
	key        key
	start, end int
}

func (w *walker) document() error {
	w.skipSpace()
	w.isObject = w.pos < len(w.data) && w.data[w.pos] == '{'
	if err := w.value(); err != nil {
		return err
	}
	w.skipSpace()
	switch {
	case w.pos != len(w.data):
		return ErrTrailingData
	case w.dup:
		return ErrDuplicateKey
	}
	return nil
}

func (w *walker) value() error {
	if w.pos >= len(w.data) {
		return ErrNotJSON
	}
	switch c := w.data[w.pos]; {
	case c == '{':
		return w.object()
	case c == '[':
		return w.array()
	case c == '"':
		_, err := w.str()
		return err
	case c == 't':
		return w.literal("true")
	case c == 'f':
		return w.literal("false")
	case c == 'n':
		return w.literal("null")
	case c == '-' || ('0' <= c && c <= '9'):
		return w.number()
	}
	return w.bad("expected a value")
}

// open enters a container, refusing to go past maxDepth.
func (w *walker) open() error {
	if w.depth >= w.maxDepth {
		return ErrTooDeep
	}
	w.depth++
	w.pos++
	w.skipSpace()
	return nil
}

func (w *walker) object() error {
	if err := w.open(); err != nil {
		return err
	}
	base := len(w.keys)
	var big map[string]struct{} // folded keys, once past smallObject
	if w.peek() == '}' {
		w.pos++
		w.depth--
		return nil
	}
	for {
		if w.peek() != '"' {
			return w.bad("expected a key in double quotes")
		}
		k, err := w.key()
		if err != nil {
			return err
		}
		big = w.addKey(base, k, big)
		w.skipSpace()
		if w.peek() != ':' {
			return w.bad(`expected ":" after the key`)
		}
		w.pos++
		w.skipSpace()
		start := w.pos
		// The one object walked at depth 2 while inInner is the value
		// itself: anything nested in it is deeper.
		if w.split && w.depth == 1 {
			w.inInner = start < len(w.data) && w.data[start] == '{' && string(w.keyText(k)) == w.inner
		}
		if err := w.value(); err != nil {
			return err
		}
		switch {
		case w.collect && w.depth == 1:
			w.top = append(w.top, member{k, start, w.pos})
			w.inInner = false
		case w.inInner && w.depth == 2:
			w.nested = append(w.nested, member{k, start, w.pos})
		}
		w.skipSpace()
		switch w.peek() {
		case ',':
			w.pos++
			w.skipSpace()
			continue
		case '}':
			w.pos++
			w.depth--
			w.keys = w.keys[:base]
			return nil
		}
		return w.bad(`expected "," or "}" after a member (a comma missing?)`)
	}
}

func (w *walker) array() error {
	if err := w.open(); err != nil {
		return err
	}
	if w.peek() == ']' {
		w.pos++
		w.depth--
		return nil
	}
	for {
		start := w.pos
		if err := w.value(); err != nil {
			return err
		}
		if w.collect && w.depth == 1 { // the items of a document that is an array
			w.top = append(w.top, member{start: start, end: w.pos})
		}
		w.skipSpace()
		switch w.peek() {
		case ',':
			w.pos++
			w.skipSpace()
			continue
		case ']':
			w.pos++
			w.depth--
			return nil
		}
		return w.bad(`expected "," or "]" after an item (a comma missing?)`)
	}
}

// key reads an object key and computes its fold hash.
func (w *walker) key() (key, error) {
	start := w.pos + 1
	escaped, err := w.str()
	if err != nil {
		return key{}, err
	}
	k := key{start: start, end: w.pos - 1}
	if escaped {
		var s string
		if json.Unmarshal(w.data[start-1:w.pos], &s) != nil {
			return key{}, ErrNotJSON
		}
		k.text = []byte(s)
	}
	k.hash = foldHash(w.keyText(k))
	return k, nil
}

func (w *walker) keyText(k key) []byte {
	if k.text != nil {
		return k.text
	}
	return w.data[k.start:k.end]
}

// addKey records k among the keys of the object whose keys start at
// base, noting a duplicate. It returns the object's map of folded keys,
// made when the object grows past smallObject.
func (w *walker) addKey(base int, k key, big map[string]struct{}) map[string]struct{} {
	if big != nil {
		if addFolded(big, w.keyText(k)) {
			w.duplicate(k)
		}
		w.keys = append(w.keys, k)
		return big
	}
	text := w.keyText(k)
	for _, o := range w.keys[base:] {
		if o.hash == k.hash && bytes.EqualFold(w.keyText(o), text) {
			w.duplicate(k)
		}
	}
	w.keys = append(w.keys, k)
	if len(w.keys)-base <= smallObject {
		return nil
	}
	big = make(map[string]struct{}, 2*smallObject)
	for _, o := range w.keys[base:] {
		addFolded(big, w.keyText(o))
	}
	return big
}

// duplicate notes that k repeats a key of its object; the first is the
// one Locate reports.
func (w *walker) duplicate(k key) {
	if !w.dup {
		w.dup, w.dupKey = true, k
	}
}

// bad is ErrNotJSON, noting what the walk expected here (the first note
// stands: it is where the walk stopped).
func (w *walker) bad(why string) error {
	if w.why == "" {
		w.why = why
	}
	return ErrNotJSON
}

// addFolded adds the fold of text to set and reports whether it was there.
func addFolded(set map[string]struct{}, text []byte) bool {
	f := string(Fold(text))
	_, seen := set[f]
	set[f] = struct{}{}
	return seen
}

// str reads a string starting at its opening quote, checking escapes,
// control characters and UTF-8. It reports whether it held a backslash.
func (w *walker) str() (escaped bool, err error) {
	w.pos++
	for w.pos < len(w.data) {
		c := w.data[w.pos]
		switch {
		case c == '"':
			w.pos++
			return escaped, nil
		case c == '\\':
			escaped = true
			if err := w.escape(); err != nil {
				return escaped, err
			}
		case c < 0x20:
			return escaped, ErrNotJSON
		case c < utf8.RuneSelf:
			w.pos++
		default:
			r, n := utf8.DecodeRune(w.data[w.pos:])
			if r == utf8.RuneError && n == 1 {
				return escaped, ErrNotUTF8
			}
			w.pos += n
		}
	}
	return escaped, ErrNotJSON
}

// escape checks one escape sequence at a backslash.
func (w *walker) escape() error {
	if w.pos+1 >= len(w.data) {
		return ErrNotJSON
	}
	switch w.data[w.pos+1] {
	case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
		w.pos += 2
		return nil
	case 'u':
		if w.pos+6 > len(w.data) {
			return ErrNotJSON
		}
		for _, h := range w.data[w.pos+2 : w.pos+6] {
			if !isHex(h) {
				return ErrNotJSON
			}
		}
		w.pos += 6
		return nil
	}
	return ErrNotJSON
}

func isHex(c byte) bool {
	return ('0' <= c && c <= '9') || ('a' <= c && c <= 'f') || ('A' <= c && c <= 'F')
}

// number reads -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?
func (w *walker) number() error {
	if w.peek() == '-' {
		w.pos++
	}
	switch c := w.peek(); {
	case c == '0':
		w.pos++
	case '1' <= c && c <= '9':
		w.digits()
	default:
		return ErrNotJSON
	}
	if w.peek() == '.' {
		w.pos++
		if w.digits() == 0 {
			return ErrNotJSON
		}
	}
	if c := w.peek(); c == 'e' || c == 'E' {
		w.pos++
		if c := w.peek(); c == '+' || c == '-' {
			w.pos++
		}
		if w.digits() == 0 {
			return ErrNotJSON
		}
	}
	return nil
}

func (w *walker) digits() int {
	n := 0
	for c := w.peek(); '0' <= c && c <= '9'; c = w.peek() {
		w.pos++
		n++
	}
	return n
}

func (w *walker) literal(lit string) error {
	if !bytes.HasPrefix(w.data[w.pos:], []byte(lit)) {
		return ErrNotJSON
	}
	w.pos += len(lit)
	return nil
}

// peek is the byte at the cursor, or 0 at the end.
func (w *walker) peek() byte {
	if w.pos < len(w.data) {
		return w.data[w.pos]
	}
	return 0
}

func (w *walker) skipSpace() {
	for w.pos < len(w.data) {
		switch w.data[w.pos] {
		case ' ', '\t', '\n', '\r':
			w.pos++
		default:
			return
		}
	}
}

// foldRune is the smallest code point of r's simple case-folding orbit,
// as encoding/json folds field names.
func foldRune(r rune) rune {
	if r < utf8.RuneSelf {
		if 'a' <= r && r <= 'z' {
			r -= 'a' - 'A'
		}
		return r
	}
	for {
		next := unicode.SimpleFold(r)
		if next <= r {
			return next
		}
		r = next
	}
}

// Fold returns the canonical fold of an (unescaped) key: two keys of one
// object are duplicates exactly when their folds are equal.
//
// # The fold, exactly (clients that mirror the rule implement this)
//
// Keys are compared after JSON unescaping. Two keys are equal under
// folding when they have the same number of code points and, position by
// position, the code points belong to the same simple case-folding orbit
// of Go's unicode.SimpleFold (Unicode CaseFolding.txt, status C and S);
// this is Go's strings.EqualFold, and exactly the relation by which
// encoding/json matches an object key to a struct field. Each code point
// is folded to the smallest code point of its orbit: for ASCII that is the
// upper-case letter; "k", "K" and U+212A (Kelvin sign) all fold to "K";
// "s", "S" and U+017F (long s) to "S"; "σ", "ς" and "Σ" to "Σ"; "ß" and
// U+1E9E to "ß". Full foldings that change length are not applied: "ß" and
// "ss" are different keys, and U+0130 and U+0131 fold only to themselves.
// An unpaired surrogate escape (\ud800) unescapes to U+FFFD, as in
// encoding/json. The tables are those of the broker's Go release
// (unicode.Version, 15.0.0 for Go 1.26); a client without SimpleFold can
// build the orbits from CaseFolding.txt of that version (code points that
// map, by status C or S, to the same code point form one orbit).
func Fold(key []byte) []byte {
	out := make([]byte, 0, len(key))
	for _, r := range string(key) {
		out = utf8.AppendRune(out, foldRune(r))
	}
	return out
}

// foldHash is FNV-1a over the folded code points of key, without
// allocating. Equal folds hash equally; a hash match is confirmed with
// bytes.EqualFold.
func foldHash(key []byte) uint64 {
	const offset, prime = 14695981039346656037, 1099511628211
	h := uint64(offset)
	for i := 0; i < len(key); {
		r, n := rune(key[i]), 1
		if r >= utf8.RuneSelf {
			r, n = utf8.DecodeRune(key[i:])
		}
		h = (h ^ uint64(foldRune(r))) * prime
		i += n
	}
	return h
}
