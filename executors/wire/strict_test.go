package wire

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"

	"github.com/airlock/airlock/executors/wire/wiretest"
)

func TestWalk(t *testing.T) {
	many := func(last string) string {
		var b strings.Builder
		b.WriteString("{")
		for i := range 40 {
			fmt.Fprintf(&b, `"key%d":%d,`, i, i)
		}
		return b.String() + `"` + last + `":0}`
	}
	cases := map[string]struct {
		in   string
		want error
	}{
		"ascii case":           {`{"a":{"Paths":1,"paths":2}}`, ErrDuplicateKey},
		"exact":                {`{"a":1,"a":2}`, ErrDuplicateKey},
		"kelvin":               {`{"k":1,"` + "\u212a" + `":2}`, ErrDuplicateKey},
		"kelvin escaped":       {`{"K":1,"\u212A":2}`, ErrDuplicateKey},
		"kelvin both escaped":  {`{"\u212a":1,"\u006b":2}`, ErrDuplicateKey},
		"long s":               {`{"S":1,"` + "\u017f" + `":2}`, ErrDuplicateKey},
		"sigma orbit":          {`{"` + "\u03a3" + `":1,"` + "\u03c2" + `":2}`, ErrDuplicateKey},
		"escaped ascii":        {`{"ab":1,"\u0061\u0042":2}`, ErrDuplicateKey},
		"in an array":          {`[1,{"x":[{"q":1,"Q":2}]}]`, ErrDuplicateKey},
		"many keys, last dup":  {many("KEY7"), ErrDuplicateKey},
		"many keys, distinct":  {many("key40"), nil},
		"many keys, kelvin":    {many("\u212aey3"), ErrDuplicateKey},
		"sibling objects":      {`[{"a":1},{"A":2}]`, nil},
		"parent and child":     {`{"a":{"A":{"a":1}}}`, nil},
		"sharp s is not ss":    {`{"` + "\u00df" + `":1,"ss":2}`, nil},
		"dotted I stays":       {`{"` + "\u0130" + `":1,"i":2,"` + "\u0131" + `":3}`, nil},
		"surrogate escapes":    {`{"\ud800":1,"\udc00":2}`, ErrDuplicateKey}, // both U+FFFD, as encoding/json reads them
		"not json beats dup":   {`{"a":1,"A":2`, ErrNotJSON},
		"trailing beats dup":   {`{"a":1,"A":2} x`, ErrTrailingData},
		"invalid utf-8":        {"{\"a\":\"\xff\"}", ErrNotUTF8},
		"control in string":    {"{\"a\":\"\x01\"}", ErrNotJSON},
		"bad escape":           {`{"a":"\x"}`, ErrNotJSON},
		"short unicode escape": {`{"a":"\u12"}`, ErrNotJSON},
		"leading zero":         {`[01]`, ErrNotJSON},
		"bare fraction":        {`[1.]`, ErrNotJSON},
		"bare exponent":        {`[1e]`, ErrNotJSON},
		"numbers":              {`[0,-0,1.5,-2e10,3E+2,4e-3]`, nil},
		"literals":             {` [true,false,null] `, nil},
		"empty":                {``, ErrNotJSON},
		"truncated literal":    {`tru`, ErrNotJSON},
		"deep enough":          {strings.Repeat("[", MaxDepth) + strings.Repeat("]", MaxDepth), nil},
		"too deep":             {strings.Repeat("[", MaxDepth+1) + strings.Repeat("]", MaxDepth+1), ErrTooDeep},
		"missing colon":        {`{"a" 1}`, ErrNotJSON},
		"trailing comma":       {`{"a":1,}`, ErrNotJSON},
		"non-string key":       {`{1:2}`, ErrNotJSON},
	}
	for name, c := range cases {
		if err := Walk([]byte(c.in), MaxDepth); !errors.Is(err, c.want) && err != c.want {
			t.Errorf("%s: got %v, want %v", name, err, c.want)
		}
	}
}

// TestFoldMatchesEncodingJSON: a key that encoding/json decodes into a
// field is a duplicate of the field's own name for the walk, and Fold
// says so.
func TestFoldMatchesEncodingJSON(t *testing.T) {
	type fields struct {
		Kind    int `json:"kind"`
		Session int `json:"session"`
		Sigma   int `json:"σx"`
	}
	for _, c := range []struct{ field, key string }{
		{"kind", "KIND"}, {"kind", "\u212aind"}, {"session", "\u017fession"}, {"session", "SESSION"}, {"σx", "ςx"}, {"σx", "Σx"},
	} {
		var v fields
		if err := json.Unmarshal([]byte(fmt.Sprintf(`{%q:7}`, c.key)), &v); err != nil {
			t.Fatal(err)
		}
		got := map[string]int{"kind": v.Kind, "session": v.Session, "σx": v.Sigma}[c.field]
		if got != 7 {
			t.Fatalf("encoding/json did not decode %q into %q: %+v", c.key, c.field, v)
		}
		if string(Fold([]byte(c.key))) != string(Fold([]byte(c.field))) {
			t.Errorf("Fold(%q) = %q, Fold(%q) = %q", c.key, Fold([]byte(c.key)), c.field, Fold([]byte(c.field)))
		}
		if err := Walk([]byte(fmt.Sprintf(`{%q:1,%q:2}`, c.field, c.key)), MaxDepth); err != ErrDuplicateKey {
			t.Errorf("%q beside %q: %v", c.key, c.field, err)
		}
	}
}

func TestIDRune(t *testing.T) {
	refused := []rune{0x00, 0x1f, 0x7f, 0x80, 0x85, 0x9f, 0x202a, 0x202b, 0x202c, 0x202d, 0x202e,
		0x2066, 0x2067, 0x2068, 0x2069, 0x2028, 0x2029, 0x200e, 0x200f, 0x061c, utf8.RuneError}
	allowed := []rune{' ', '~', 0xa0, 0xe9, 0x6f22, 0x2027, 0x202f, 0x2065, 0x206a, 0x200d, 0x2010, 0x061b, 0x061d, 0x1f600}
	for _, r := range refused {
		if IDRune(r) || ValidID("a"+string(r)+"b") {
			t.Errorf("%U allowed in an identifier", r)
		}
	}
	for _, r := range allowed {
		if !IDRune(r) || !ValidID("a"+string(r)+"b") {
			t.Errorf("%U refused in an identifier", r)
		}
	}
}

type strictInner struct {
	Name string `json:"name"`
}

type strictEmbedded struct {
	Extra string `json:"extra"`
}

type strictDoc struct {
	strictEmbedded
	Bearer string                 `json:"bearer"`
	Items  []strictInner          `json:"items"`
	ByKey  map[string]strictInner `json:"byKey"`
	Free   json.RawMessage        `json:"free"`
	Any    any                    `json:"any"`
	Ptr    *strictInner           `json:"ptr"`
	Plain  int
	Hidden int `json:"-"`
}

// strictDocKeys are the keys of strictDoc as written in its tags.
var strictDocKeys = map[string]bool{"extra": true, "bearer": true, "items": true, "byKey": true, "free": true, "any": true, "ptr": true, "Plain": true}

func TestDecodeStrictExactKeys(t *testing.T) {
	cases := map[string]Rule{
		`{"bearer":"b","items":[{"name":"n"}],"byKey":{"Any":{"name":"n"}},"free":{"X":1},"any":{"Y":2},"ptr":{"name":"p"},"extra":"e","Plain":1}`: "",
		`{"BEARER":"b"}`:                      UnknownField,
		`{"Bearer":"b"}`:                      UnknownField,
		`{"bearer":"b","Bearer":"c"}`:         Malformed,
		`{"items":[{"NAME":"n"}]}`:            UnknownField,
		`{"byKey":{"k":{"Name":"n"}}}`:        UnknownField,
		`{"ptr":{"nAme":"p"}}`:                UnknownField,
		`{"EXTRA":"e"}`:                       UnknownField,
		`{"plain":1}`:                         UnknownField,
		`{"Hidden":1}`:                        UnknownField,
		`{"-":1}`:                             UnknownField,
		`{"free":{"a":1,"A":2}}`:              Malformed,
		`{"items":"not a list"}`:              Malformed,
		`{"` + "\u017f" + `tring":1}`:         UnknownField,
		`{"bearer":"b"} {"bearer":"c"}`:       Malformed,
		`{"items":[{"name":"a","NAME":"b"}]}`: Malformed,
		// null only where the Go type has one (PROTOCOL section 1.7's
		// readers must not take a null for a zero value).
		`{"ptr":null,"free":null,"any":null}`:  "",
		`{"free":{"k":null},"any":{"k":null}}`: "",
		`null`:                                 Malformed,
		`{"bearer":null}`:                      Malformed,
		`{"Plain":null}`:                       Malformed,
		`{"extra":null}`:                       Malformed,
		`{"items":null}`:                       Malformed,
		`{"items":[null]}`:                     Malformed,
		`{"items":[{"name":null}]}`:            Malformed,
		`{"byKey":{"k":null}}`:                 Malformed,
		`{"ptr":{"name":null}}`:                Malformed,
		`{"bearer":null,"Bogus":1}`:            UnknownField,
	}
	for in, want := range cases {
		var v strictDoc
		err := DecodeStrict([]byte(in), &v)
		if (want == "" && err != nil) || (want != "" && RuleOf(err) != want) {
			t.Errorf("%s: got %v, want %q", in, err, want)
		}
	}
}

// FuzzWalk holds the walk to an independent oracle: it accepts exactly the
// documents that are valid UTF-8 and valid JSON (encoding/json), nested
// at most MaxDepth, with no two keys of an object equal under
// strings.EqualFold.
func FuzzWalk(f *testing.F) {
	for _, dir := range []string{"wire/call", "wire/answer", "channel/hello", "channel/catalog", "plugin"} {
		for _, c := range wiretest.Golden(f, dir) {
			f.Add([]byte(c.In))
		}
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		err := Walk(data, MaxDepth)
		want := utf8.Valid(data) && json.Valid(data) && wiretest.Depth(data) <= MaxDepth && !wiretest.FoldDuplicate(data)
		if (err == nil) != want {
			t.Fatalf("Walk = %v, oracle accepts = %v for %q", err, want, data)
		}
	})
}

// FuzzDecodeStrict: what DecodeStrict accepts has no case-folded
// duplicate at any depth, and every key of the typed part spells a field.
func FuzzDecodeStrict(f *testing.F) {
	for _, dir := range []string{"channel/hello", "channel/catalog", "plugin"} {
		for _, c := range wiretest.Golden(f, dir) {
			f.Add([]byte(c.In))
		}
	}
	f.Add([]byte(`{"bearer":"b","items":[{"name":"n"}],"free":{"k":1}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		var v strictDoc
		if DecodeStrict(data, &v) != nil {
			return
		}
		if wiretest.FoldDuplicate(data) {
			t.Fatalf("accepted a case-folded duplicate: %q", data)
		}
		var keys map[string]json.RawMessage
		if json.Unmarshal(data, &keys) == nil {
			for k := range keys {
				if !strictDocKeys[k] {
					t.Fatalf("accepted key %q that spells no field", k)
				}
			}
		}
	})
}

// FuzzFoldKeys holds the fold to strings.EqualFold over arbitrary pairs of
// keys, in a small object (compared pairwise) and in a large one (a map of
// folded keys): Fold agrees with EqualFold on the pair, and the walk finds
// a duplicate exactly when the oracle does.
func FuzzFoldKeys(f *testing.F) {
	for _, p := range [][2]string{{"a", "b"}, {"path", "Path"}, {"k", "\u212a"}, {"s", "\u017f"}, {"ß", "ss"}, {"σ", "ς"}, {"\u0130", "i"}, {"x", "x"}} {
		f.Add(p[0], p[1])
	}
	f.Fuzz(func(t *testing.T, k1, k2 string) {
		q1, _ := json.Marshal(k1) // invalid UTF-8 becomes \ufffd, as a decoder reads it
		q2, _ := json.Marshal(k2)
		var u1, u2 string
		_ = json.Unmarshal(q1, &u1)
		_ = json.Unmarshal(q2, &u2)
		want := strings.EqualFold(u1, u2)
		if got := string(Fold([]byte(u1))) == string(Fold([]byte(u2))); got != want {
			t.Fatalf("Fold(%+q) == Fold(%+q) is %v, EqualFold %v", u1, u2, got, want)
		}
		var filler strings.Builder
		for i := range smallObject + 4 {
			fmt.Fprintf(&filler, `"f%d":0,`, i)
		}
		for _, doc := range []string{
			`{"x":[{` + string(q1) + `:1,` + string(q2) + `:2}]}`,
			`{` + filler.String() + string(q1) + `:1,` + string(q2) + `:2}`,
		} {
			dup := wiretest.FoldDuplicate([]byte(doc))
			err := Walk([]byte(doc), MaxDepth)
			if (err == ErrDuplicateKey) != dup || (err != nil && err != ErrDuplicateKey) {
				t.Fatalf("Walk(%+q) = %v, oracle finds a duplicate: %v", doc, err, dup)
			}
		}
	})
}

// TestMembersInterned checks that interning keys changes nothing in the
// result: interned, escaped and unknown keys alike.
func TestMembersInterned(t *testing.T) {
	doc := []byte(`{"type":"a","pa\u0079load":{"x":1},"other":[1,2],"k\u00e9":"v"}`)
	want, err := MembersDepth(doc, MaxDepth)
	if err != nil {
		t.Fatal(err)
	}
	names := map[string]string{"type": "type", "payload": "payload"}
	got, err := MembersInterned(doc, MaxDepth, names)
	if err != nil {
		t.Fatal(err)
	}
	if !maps.EqualFunc(got, want, func(a, b json.RawMessage) bool { return string(a) == string(b) }) || len(got) != 4 {
		t.Fatalf("interned %v, plain %v", got, want)
	}
	if _, err := MembersInterned([]byte(`{"type":1,"TYPE":2}`), MaxDepth, names); !errors.Is(err, ErrDuplicateKey) {
		t.Fatalf("duplicate: %v", err)
	}
}

// FuzzEachMemberOf holds the one-walk split to the two walks it replaces:
// EachMember over the document, then EachMember over the named member's
// value when it is an object. The verdict, the top-level members and the
// inner members must all be the same.
func FuzzEachMemberOf(f *testing.F) {
	for _, s := range []string{
		`{"type":"a","payload":{"x":1,"y":[{"z":2}]}}`,
		`{"payload":[{"x":1}],"p":{"a":{"b":1}}}`,
		`{"pa\u0079load":{"k\u00e9":"v"},"payload2":{}}`,
		`{"payload":{"x":1,"X":2}}`,
		`{"payload":{"a":{"b":{"c":1}}}}`,
		` { "payload" : { "a" : 1 , "b" : "\"" } } `,
		`{"payload":"{\"x\":1}"}`,
		`{"payload":{}}`, `[{"payload":{"x":1}}]`, `{"payload":{"x":1}`, "{\"payload\":{\"\xff\":1}}",
	} {
		f.Add([]byte(s), "payload", 8)
	}
	f.Fuzz(func(t *testing.T, data []byte, inner string, depth int) {
		depth = 1 + depth&15
		type kv struct{ k, v string }
		var topOld, inOld, topNew, inNew []kv
		errOld := EachMember(data, depth, func(k []byte, v json.RawMessage) {
			topOld = append(topOld, kv{string(k), string(v)})
		})
		if errOld == nil {
			for _, m := range topOld {
				if m.k == inner && m.v[0] == '{' {
					if err := EachMember([]byte(m.v), depth, func(k []byte, v json.RawMessage) {
						inOld = append(inOld, kv{string(k), string(v)})
					}); err != nil {
						t.Fatalf("the value of an accepted document failed its own walk: %v", err)
					}
				}
			}
		}
		errNew := EachMemberOf(data, depth, inner, func(k []byte, v json.RawMessage) {
			topNew = append(topNew, kv{string(k), string(v)})
		}, func(k []byte, v json.RawMessage) {
			inNew = append(inNew, kv{string(k), string(v)})
		})
		if errNew != errOld || !slices.Equal(topNew, topOld) || !slices.Equal(inNew, inOld) {
			t.Fatalf("%q, inner %q, depth %d:\none walk  %v %q %q\ntwo walks %v %q %q", data, inner, depth, errNew, topNew, inNew, errOld, topOld, inOld)
		}
	})
}

// TestIdentifiersAndWhysShareOneRule: every character an identifier
// refuses is one a why drops, and every character a why keeps is one an
// identifier may hold (PROTOCOL section 1.8).
func TestIdentifiersAndWhysShareOneRule(t *testing.T) {
	for r := rune(0); r <= unicode.MaxRune; r++ {
		id := ValidID("a" + string(r) + "b")
		kept := CleanWhy(string(r), 8) != ""
		if id != kept {
			t.Errorf("%U: allowed in an identifier %v, kept in a why %v", r, id, kept)
		}
	}
}
