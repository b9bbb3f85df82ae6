package plugins_test

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/airlock/airlock/executors/wire/wiretest"
	"github.com/airlock/airlock/plugins"
)

var (
	zeros = strings.Repeat("0", 64)
	sum   = strings.Repeat("ab", 32)
)

// TestSetSHA256KeepsTheFile: only the value changes; key order, layout,
// and a "sha256" nested anywhere else are left alone.
func TestSetSHA256KeepsTheFile(t *testing.T) {
	in := "{\n  \"id\": \"x\",\n  \"sha256\" :\t\"" + zeros + "\",\n" +
		"  \"tools\": [{\"name\": \"sha256\", \"inputSchema\": {\"properties\": {\"sha256\": {\"type\": \"string\"}}}}]\n}\n"
	want := strings.Replace(in, zeros, sum, 1)
	got, err := plugins.SetSHA256([]byte(in), sum)
	if err != nil || string(got) != want {
		t.Fatalf("got %q, %v\nwant %q", got, err, want)
	}
	// Any value, of any type, is replaced.
	for _, v := range []string{`""`, `null`, `12`, `{"a":[1]}`, `"\u0030"`} {
		got, err := plugins.SetSHA256([]byte(`{"sha256":`+v+`,"id":"x"}`), sum)
		if err != nil || string(got) != `{"sha256":"`+sum+`","id":"x"}` {
			t.Errorf("value %s: got %s, %v", v, got, err)
		}
	}
}

// TestSetSHA256Refusals: a file it cannot rewrite safely is named, never
// guessed at.
func TestSetSHA256Refusals(t *testing.T) {
	for in, want := range map[string]string{
		`{"id":"x"}`:                  `no top-level "sha256" member`,
		`{"tools":[{"sha256":"x"}]}`:  `no top-level "sha256" member`,
		`{"sha256":"a","sha256":"b"}`: `"sha256" appears twice`,
		`[1]`:                         "not a JSON object",
		``:                            "not a JSON object",
		`{"sha256":"a"} {}`:           "data after the object",
		`{"sha256":"a"} x`:            "data after the object",
		`{"sha256":"a",}`:             "invalid character",
		`{"sha256":"a"`:               "EOF",
	} {
		_, err := plugins.SetSHA256([]byte(in), sum)
		if err == nil || !strings.Contains(err.Error(), want) || !strings.HasPrefix(err.Error(), "plugin.json: ") {
			t.Errorf("%q: got %v, want plugin.json: …%s…", in, err, want)
		}
	}
}

// TestSetSHA256OnBundled: the bundled manifests round-trip byte for byte.
func TestSetSHA256OnBundled(t *testing.T) {
	for _, name := range []string{"notes", "web"} {
		data, err := os.ReadFile(filepath.Join("bundled", name, "plugin.json"))
		if err != nil {
			t.Fatal(err)
		}
		m, err := plugins.ParseManifest(data)
		if err != nil {
			t.Fatal(err)
		}
		got, err := plugins.SetSHA256(data, m.SHA256)
		if err != nil || !bytes.Equal(got, data) {
			t.Errorf("%s: rewriting its own sha256 changed the file (%v)", name, err)
		}
	}
}

// FuzzSetSHA256: when it succeeds, the result is the same JSON object but
// for a top-level sha256 equal to sum, and the bytes outside the value
// are unchanged.
func FuzzSetSHA256(f *testing.F) {
	for _, c := range wiretest.Golden(f, "plugin") {
		f.Add([]byte(c.In))
	}
	f.Add([]byte(`{"sha256" : "x" , "a":{"sha256":1}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		got, err := plugins.SetSHA256(data, sum)
		if err != nil {
			return
		}
		var before, after map[string]json.RawMessage
		if json.Unmarshal(data, &before) != nil || json.Unmarshal(got, &after) != nil {
			t.Fatalf("not an object before or after: %q -> %q", data, got)
		}
		if string(after["sha256"]) != `"`+sum+`"` || len(before) != len(after) {
			t.Fatalf("sha256 not set: %q -> %q", data, got)
		}
		for k, v := range before {
			if k != "sha256" && !bytes.Equal(v, after[k]) {
				t.Fatalf("member %q changed: %q -> %q", k, data, got)
			}
		}
		i := bytes.Index(got, []byte(`"`+sum+`"`))
		if i < 0 || !bytes.HasPrefix(data, got[:i]) || !bytes.HasSuffix(data, got[i+len(sum)+2:]) {
			t.Fatalf("bytes outside the value changed: %q -> %q", data, got)
		}
	})
}
