package wire

import (
	"strings"
	"testing"
)

func TestValidID(t *testing.T) {
	for s, want := range map[string]bool{
		"call_1": true, "é": true, "": false, "a\nb": false, "a\x00": false,
		strings.Repeat("x", 128): true, strings.Repeat("x", 129): false, "\xff": false,
	} {
		if ValidID(s) != want {
			t.Errorf("ValidID(%q) = %v", s, !want)
		}
	}
}

func TestCompactMember(t *testing.T) {
	deep := strings.Repeat("[", MaxDepth-1) + strings.Repeat("]", MaxDepth-1)
	for in, want := range map[string]string{
		` { "a" : [1, 2] } ` + "\n":         `{"a":[1,2]}`,
		`{"n":1e400}`:                       `{"n":1e400}`,
		`{"d":` + deep[1:len(deep)-1] + `}`: `{"d":` + deep[1:len(deep)-1] + `}`,
		`{"a":1,"a":2}`:                     "",
		`{"a":{"b":1,"b":1}}`:               "",
		`{"a":1}{"b":2}`:                    "",
		`[1]`:                               "",
		`"s"`:                               "",
		``:                                  "",
		"{\"s\":\"\xff\"}":                  "",
		`{"d":` + deep + `}`:                "", // too deep once inside an envelope
	} {
		got, err := CompactMember([]byte(in))
		if want == "" {
			if err == nil {
				t.Errorf("CompactMember(%.40q) accepted", in)
			}
			continue
		}
		if err != nil || string(got) != want {
			t.Errorf("CompactMember(%.40q) = %s, %v", in, got, err)
		}
	}
}

// TestCompactMemberFitsEnvelope: whatever CompactMember accepts parses as
// the observed member of an answer.
func TestCompactMemberFitsEnvelope(t *testing.T) {
	deep := strings.Repeat("[", MaxDepth-2) + strings.Repeat("]", MaxDepth-2)
	obs, err := CompactMember([]byte(`{"d":` + deep + `}`))
	if err != nil {
		t.Fatal(err)
	}
	data, _ := Observed("c", obs, nil).MarshalJSON()
	if _, err := ParseAnswer(data); err != nil {
		t.Fatalf("accepted member does not fit an answer: %v", err)
	}
}
