package main

import "testing"

func TestPrintableRefusedNames(t *testing.T) {
	for in, want := range map[string]string{
		"notes":               "notes",
		"bad\x1b]0;pwned\x07": `"bad\x1b]0;pwned\a"`,
		"rtl\u202eevil":       `"rtl\u202eevil"`,
		"tab\there":           `"tab\there"`,
		"ünïcode":             "ünïcode",
	} {
		if got := printable(in); got != want {
			t.Errorf("printable(%q) = %s, want %s", in, got, want)
		}
	}
}
