package argsvalue

import (
	"bytes"
	"reflect"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"go.uber.org/goleak"

	"github.com/airlock/airlock/executors/wire"
)

// checkArgsValue: for args the envelope accepts, Decode is exactly
// what jsonschema.UnmarshalJSON decodes, so the schema sees the same value.
func checkArgsValue(t *testing.T, raw []byte) {
	t.Helper()
	args, err := wire.CompactMember(raw)
	if err != nil {
		return
	}
	want, werr := jsonschema.UnmarshalJSON(bytes.NewReader(args))
	got, gerr := Decode(args)
	if (werr == nil) != (gerr == nil) || !reflect.DeepEqual(got, want) {
		t.Fatalf("%s: Decode %#v (%v), UnmarshalJSON %#v (%v)", args, got, gerr, want, werr)
	}
}

var argsSeeds = []string{
	`{}`, `{"path":"welcome.md"}`, `{"a":[1,-2.5e+3,0.0,true,false,null,"x"],"b":{"c":{}},"d":[]}`,
	`{"s":"tab\tquote\"slash\\/u\u00e9\ud83d\ude00"}`, `{"bad":"\xff\xfe"}`, `{"n":1E400}`, `{"k\u0000":"v"}`,
	`{ "spaced" : [ 1 , 2 ] }`, `{"deep":[[[[{"x":[]}]]]]}`, `{"esc":"\\"}`, `{"x":"\ud800"}`,
}

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestArgsValueMatchesUnmarshalJSON(t *testing.T) {
	for _, s := range argsSeeds {
		checkArgsValue(t, []byte(s))
	}
}

func FuzzArgsValue(f *testing.F) {
	for _, s := range argsSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) { checkArgsValue(t, raw) })
}
