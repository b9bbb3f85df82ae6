package jsclient_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/airlock/airlock/executors/wire"
)

// TestWireParity holds @airlock/client/wire to the broker's validator, the
// oracle: every golden input, the fuzz corpora and a few thousand
// deterministic mutations of them go through wire.ParseCall and
// wire.ParseAnswer here and through the committed dist/wire.js in Node
// (test/parity.test.mjs), which fails on any verdict, or value, that
// differs and shows the input (PROTOCOL section 12).
func TestWireParity(t *testing.T) {
	nodeBin := nodeOrSkip(t)
	inputs := parityInputs(t)
	path := filepath.Join(t.TempDir(), "cases.jsonl")
	writeCases(t, path, inputs)
	cmd := exec.Command(nodeBin, "--test", "--test-timeout=300000", "--test-reporter=spec", filepath.Join("test", "parity.test.mjs"))
	cmd.Env = append(os.Environ(), "AIRLOCK_WIRE_CASES="+path)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("node parity (%d cases): %v\n%s", len(inputs), err, tail(string(out), 8000))
	}
	if !bytes.Contains(out, []byte("verdicts agree")) {
		t.Fatalf("the parity suite did not run:\n%s", tail(string(out), 4000))
	}
	t.Logf("%d inputs agree", len(inputs))
}

// parityCase is one line of the cases file: the input (base64 in JSON),
// Go's verdict for it as a call and as an answer, and what a verdict of ok
// read out of it.
type parityCase struct {
	In     []byte          `json:"in"`
	Quoted string          `json:"quoted"`
	Call   string          `json:"call"`
	Answer string          `json:"answer"`
	Value  json.RawMessage `json:"value,omitempty"`
}

func verdict(err error) string {
	if err == nil {
		return "ok"
	}
	return string(wire.RuleOf(err))
}

func writeCases(t *testing.T, path string, inputs [][]byte) {
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	w := bufio.NewWriter(f)
	enc := json.NewEncoder(w)
	for _, in := range inputs {
		c, cerr := wire.ParseCall(in)
		a, aerr := wire.ParseAnswer(in)
		pc := parityCase{In: in, Quoted: strconv.Quote(string(in)), Call: verdict(cerr), Answer: verdict(aerr)}
		switch {
		case cerr == nil:
			pc.Value, _ = json.Marshal(map[string]any{"callId": c.CallID, "tool": c.Tool, "descriptorId": c.DescriptorID})
		case aerr == nil:
			v := map[string]any{"callId": a.CallID, "ok": a.OK}
			if !a.OK {
				v["refused"], v["why"] = a.Refused, a.Why
			}
			if a.Budget != nil {
				v["budget"] = a.Budget
			}
			pc.Value, _ = json.Marshal(v)
		}
		if err := enc.Encode(pc); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
}

// parityInputs are the golden inputs, the fuzz corpora, hand-made edge
// cases, and their mutations, without repeats.
func parityInputs(t *testing.T) [][]byte {
	seeds := goldenInputs(t)
	seeds = append(seeds, edgeInputs()...)
	r := rand.New(rand.NewPCG(10, 12))
	all := slices.Clone(seeds)
	for _, s := range seeds {
		all = append(all, mutate(r, s)...)
	}
	seen := map[string]bool{}
	out := all[:0]
	for _, in := range all {
		if !seen[string(in)] {
			seen[string(in)] = true
			out = append(out, in)
		}
	}
	if len(out) < 2000 {
		t.Fatalf("only %d parity inputs", len(out))
	}
	return out
}

func goldenInputs(t *testing.T) [][]byte {
	root := filepath.Join("..", "..")
	var out [][]byte
	for _, pattern := range []string{"testdata/wire/*/*.txt", "testdata/channel/*/*.txt", "testdata/plugin/*.txt"} {
		files, _ := filepath.Glob(filepath.Join(root, pattern))
		for _, f := range files {
			data, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			in, _, ok := bytes.Cut(data, []byte("\n----\n"))
			if !ok {
				t.Fatalf("%s: no separator", f)
			}
			out = append(out, in)
		}
	}
	if len(out) < 50 {
		t.Fatalf("only %d golden inputs", len(out))
	}
	corpora, _ := filepath.Glob(filepath.Join(root, "executors", "wire", "testdata", "fuzz", "*", "*"))
	for _, f := range corpora {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, line := range strings.Split(string(data), "\n") {
			if q, ok := strings.CutPrefix(line, "[]byte("); ok {
				s, err := strconv.Unquote(strings.TrimSuffix(q, ")"))
				if err != nil {
					t.Fatalf("%s: %v", f, err)
				}
				out = append(out, []byte(s))
			}
		}
	}
	return out
}

const okCall = `{"v":1,"callId":"c1","tool":"read_notes","descriptorId":"notes","args":{"path":"a.md"},"boundsEcho":{"timeoutMs":2000}}`
const okAnswer = `{"v":1,"callId":"c1","ok":true,"observed":{"text":"hi"},"budget":{"requestsUsed":0,"requestsLimit":3}}`
const okRefusal = `{"v":1,"callId":"c1","ok":false,"refused":"fetch-failed","why":"no","budget":{"requestsUsed":1,"requestsLimit":3}}`

// foldPairs are keys that the broker's fold makes equal (first group) or
// keeps apart (second group).
var foldPairs = [][2]string{
	{"k", "K"}, {"k", "\u212a"}, {"K", `\u212A`}, {"s", "\u017f"}, {"S", `\u017f`},
	{"σ", "ς"}, {"Σ", "ς"}, {"ß", "ẞ"}, {"ǅ", "ǆ"}, {"Ǆ", "ǆ"}, {"𐐀", "𐐨"}, {"𐐀", `\ud801\udc28`},
	{`\ud800`, `\udc00`}, {`\ud800`, "\ufffd"}, {"a", `\u0041`}, {"µ", "μ"}, {"ͅ", "ι"}, {"θ", "ϑ"},
	{"ss", "ß"}, {"i", "İ"}, {"i", "ı"}, {"k", "ǩ"}, {"a", "b"}, {"ﬀ", "FF"}, {"Å", "Å"},
}

func edgeInputs() [][]byte {
	var out []string
	call := func(args string) string {
		return `{"v":1,"callId":"c","tool":"t","descriptorId":"d","args":` + args + `,"boundsEcho":{}}`
	}
	for _, p := range foldPairs {
		out = append(out,
			call(`{"`+p[0]+`":1,"`+p[1]+`":2}`),
			call(`{"x":[{"y":{"`+p[0]+`":1,"`+p[1]+`":2}}]}`),
			`{"v":1,"callId":"c","tool":"t","descriptorId":"d","args":{},"boundsEcho":{},"`+p[0]+`":1,"`+p[1]+`":2}`,
		)
	}
	for _, v := range []string{"1", "1.0", "1e0", "10e-1", "-0", "0", "2", "-1", "01", "1e999", "100000000000000000000000000", "true", `"1"`, "null", "[1]", "{}", "1 ", " 1"} {
		out = append(out,
			`{"v":`+v+`,"callId":"c","tool":"t","descriptorId":"d","args":{},"boundsEcho":{}}`,
			`{"v":`+v+`,"callId":"c","ok":true,"observed":{}}`,
			`{"v":`+v+`,"grant":1}`)
	}
	for _, n := range []string{"0", "1", "9007199254740993", "9999999999999999", "10000000000000000", "-1", "1.0", "1e2", "01", `"1"`, "null", "1e400"} {
		out = append(out,
			`{"v":1,"callId":"c","ok":true,"observed":{},"budget":{"requestsUsed":`+n+`,"requestsLimit":3}}`,
			`{"v":1,"callId":"c","ok":false,"refused":"overloaded","why":"w","budget":{"requestsUsed":0,"requestsLimit":`+n+`}}`,
			call(`{"n":`+n+`}`))
	}
	for _, budget := range []string{`{}`, `[]`, `null`, `{"requestsUsed":0}`, `{"requestsUsed":0,"requestsLimit":0,"x":1}`, `{"RequestsUsed":0,"requestsLimit":0}`, `{"requestsUsed":0,"requestsLimit":0,"requestsused":1}`} {
		out = append(out, `{"v":1,"callId":"c","ok":true,"observed":{},"budget":`+budget+`}`)
	}
	for _, id := range []string{
		"", "a", strings.Repeat("a", 128), strings.Repeat("a", 129), strings.Repeat("é", 128), strings.Repeat("é", 129),
		strings.Repeat("😀", 128), strings.Repeat("😀", 129), strings.Repeat(`\ud83d\ude00`, 128), strings.Repeat(`\ud83d\ude00`, 129),
		`\u0000`, `\u001f`, `\u007f`, `\u0080`, `\u009f`, `\u00a0`, "\u00a0", `\u200e`, `\u200f`, `\u061c`, "\u200e", `\u200d`, `\u2027`, `\u2028`, `\u2029`, `\u202a`, `\u202e`, `\u202f`,
		`\u2065`, `\u2066`, `\u2069`, `\u206a`, `\ufffd`, "\ufffd", `\ud800`, `\udc00`, `\ud83d\ude00`, `\ud83d`, `\ud83dx`, `\ud83d\u0041`, `\t`, `\/`, `a\"b`,
		"\u202e", "\u2066", "\u0085", "\u3000", "ǅ", "\U0010FFFF", "\uFEFF",
	} {
		out = append(out,
			`{"v":1,"callId":"`+id+`","tool":"t","descriptorId":"d","args":{},"boundsEcho":{}}`,
			`{"v":1,"callId":"c","tool":"`+id+`","descriptorId":"d","args":{},"boundsEcho":{}}`,
			`{"v":1,"callId":"`+id+`","ok":false,"refused":"exec-threw","why":"`+id+`"}`)
	}
	for _, rule := range append(slices.Clone(wire.Rules), "allow", "Malformed", `m\u0061lformed`, "", "exec-threw ") {
		out = append(out, `{"v":1,"callId":"c","ok":false,"refused":"`+string(rule)+`","why":"w"}`)
	}
	out = append(out, []string{
		`{"v":1,"callId":"c","ok":true}`, `{"v":1,"callId":"c","ok":true,"observed":[]}`, `{"v":1,"callId":"c","ok":true,"observed":null}`,
		`{"v":1,"callId":"c","ok":true,"observed":{},"why":"x"}`, `{"v":1,"callId":"c","ok":true,"observed":{},"refused":"malformed"}`,
		`{"v":1,"callId":"c","ok":false,"refused":"malformed"}`, `{"v":1,"callId":"c","ok":false,"why":"x"}`,
		`{"v":1,"callId":"c","ok":false,"refused":"malformed","why":1}`, `{"v":1,"callId":"c","ok":false,"refused":"malformed","why":"x","observed":{}}`,
		`{"v":1,"callId":"c","ok":"true","observed":{}}`, `{"v":1,"callId":"c","ok":1,"observed":{}}`, `{"v":1,"ok":true,"observed":{}}`,
	}...)
	for _, depth := range []int{126, 127, 128, 129, 1000} {
		out = append(out,
			call(strings.Repeat(`{"a":`, depth-1)+"1"+strings.Repeat("}", depth-1)),
			call(`{"a":`+strings.Repeat("[", depth-2)+strings.Repeat("]", depth-2)+"}"),
			strings.Repeat("[", depth)+strings.Repeat("]", depth))
	}
	bigObject := func(n int, dup string) string {
		var b strings.Builder
		b.WriteString("{")
		for i := range n {
			fmt.Fprintf(&b, `"key%d":%d,`, i, i)
		}
		b.WriteString(`"` + dup + `":0}`)
		return b.String()
	}
	for _, n := range []int{15, 16, 17, 40} {
		out = append(out, call(bigObject(n, "KEY3")), call(bigObject(n, "key3x")), call(bigObject(n, "\u212aEY0")), call(bigObject(n, "KEY"+strconv.Itoa(n-1))))
	}
	for _, ws := range []string{" ", "\t", "\n", "\r", "\u00a0", "\ufeff", "\v", "\f", "\u2028"} {
		out = append(out, ws+okCall, okCall+ws, ws+okAnswer+ws)
	}
	out = append(out, okCall, okAnswer, okRefusal, okCall+okCall, okCall+"x", okCall+"\x00", `"x"`, "1", "null", "", " ", "{", "}", "{}", "[]",
		`{"v":1,"callId":"c","tool":"t","descriptorId":"d","args":{"__proto__":{"x":1}},"boundsEcho":{"constructor":1}}`,
		`{"v":1,"__proto__":1}`, `{"v":1,"callId":"c","tool":"t","descriptorId":"d","args":{},"boundsEcho":{},"boundsEcho":{}}`,
		`{"\u0076":1,"callId":"c","tool":"t","descriptorId":"d","args":{},"boundsEcho":{}}`,
		`{"v":1,"callId":"c","tool":"t","descriptorId":"d","args":{"a":"\x01"},"boundsEcho":{}}`,
		`{"v":1,"callId":"c","tool":"t","descriptorId":"d","args":{"a":"\u0001\b\f\n\r\t\\\"\/"},"boundsEcho":{}}`,
		`{"v":1,"callId":"c","tool":"t","descriptorId":"d","args":{"a":"\x"},"boundsEcho":{}}`,
		`{"v":1,"callId":"c","tool":"t","descriptorId":"d","args":{"a":"\u12G4"},"boundsEcho":{}}`,
		`{"v":1,"callId":"c","tool":"t","descriptorId":"d","args":{"a":[1,2,]},"boundsEcho":{}}`,
		`{"v":1,"callId":"c","tool":"t","descriptorId":"d","args":{"a":.5,"b":-.5,"c":1.,"d":1e,"e":+1},"boundsEcho":{}}`,
		`{"v":1,"callId":"c","tool":"t","descriptorId":"d","args":{"a":NaN},"boundsEcho":{}}`,
		`{"v":1,"callId":"c","tool":"t","descriptorId":"d","args":{"a":-0.0e+00,"b":1E-7,"c":123456789012345678901234567890e-999},"boundsEcho":{}}`,
		`{'v':1}`, `{"v":1,}`, `{"v" 1}`, `{"v":1 "x":2}`, `{"v":tru}`, `{"v":nul}`, `{"v":True}`,
	)
	bytesOut := make([][]byte, 0, len(out)+16)
	for _, s := range out {
		bytesOut = append(bytesOut, []byte(s))
	}
	// Bytes that are not UTF-8, inside strings and out of them.
	for _, bad := range []string{"\xff", "\xc3", "\xc0\x80", "\xed\xa0\x80", "\xed\xbf\xbf", "\xf4\x90\x80\x80", "\xe2\x82", "\xef\xbb\xbf", "\xf0\x9f\x98"} {
		bytesOut = append(bytesOut,
			[]byte(`{"v":1,"callId":"c`+bad+`","tool":"t","descriptorId":"d","args":{},"boundsEcho":{}}`),
			[]byte(call(`{"k`+bad+`":1}`)),
			[]byte(bad+okCall),
			[]byte(`{"v":1,"callId":"c","ok":false,"refused":"exec-threw","why":"`+bad+`"}`))
	}
	return bytesOut
}

var keyPattern = regexp.MustCompile(`"([^"\\]{1,24})"\s*:`)

// mutate returns deterministic variants of in: byte flips, truncations,
// key case changes (Kelvin sign and long s included), duplicate keys at
// depth, and huge numbers.
func mutate(r *rand.Rand, in []byte) [][]byte {
	var out [][]byte
	interesting := []byte("{}[]\":,\\0123456789-+.eEtfnu \t\n\x00\x1f\x7f\x80\xc3\xe2\xffkKsS")
	for range 6 {
		if len(in) == 0 {
			break
		}
		b := slices.Clone(in)
		for range 1 + r.IntN(2) {
			b[r.IntN(len(b))] = interesting[r.IntN(len(interesting))]
		}
		out = append(out, b)
	}
	for range 3 {
		if len(in) > 1 {
			out = append(out, slices.Clone(in[:r.IntN(len(in))]))
		}
	}
	keys := keyPattern.FindAllSubmatchIndex(in, -1)
	if len(keys) > 0 {
		swaps := []func(string) string{
			strings.ToUpper, strings.ToLower,
			func(s string) string { return strings.NewReplacer("k", "\u212a", "K", "\u212a").Replace(s) },
			func(s string) string { return strings.NewReplacer("s", "\u017f", "S", "\u017f").Replace(s) },
			func(s string) string { return strings.NewReplacer("s", `\u017f`, "k", `\u212A`).Replace(s) },
			func(s string) string {
				if s == "" {
					return s
				}
				return `\u00` + strconv.FormatInt(int64(s[0]), 16) + s[1:]
			},
		}
		for range 4 {
			k := keys[r.IntN(len(keys))]
			name := string(in[k[2]:k[3]])
			swapped := swaps[r.IntN(len(swaps))](name)
			// Replace the key, or add the variant as a second key beside it.
			b := slices.Concat(in[:k[2]], []byte(swapped), in[k[3]:])
			out = append(out, b)
			dup := slices.Concat(in[:k[0]], []byte(`"`+swapped+`":0,`), in[k[0]:])
			out = append(out, dup)
		}
	}
	// A duplicate hidden deeper, under every opening brace in turn.
	for i := 0; i < len(in); i++ {
		if in[i] == '{' && r.IntN(3) == 0 {
			p := foldPairs[r.IntN(len(foldPairs))]
			out = append(out, slices.Concat(in[:i+1], []byte(`"`+p[0]+`":1,"`+p[1]+`":{},`), in[i+1:]))
		}
	}
	// Huge and odd numbers in place of each number.
	nums := regexp.MustCompile(`-?\d+(\.\d+)?([eE][+-]?\d+)?`).FindAllIndex(in, 3)
	for _, n := range nums {
		for _, big := range []string{"1e999999", "123456789012345678901234567890", "-0", "1.0", "9999999999999999"} {
			out = append(out, slices.Concat(in[:n[0]], []byte(big), in[n[1]:]))
		}
	}
	return out
}
