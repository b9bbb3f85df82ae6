package wire

import (
	"errors"
	"fmt"
)

// Error is a validation failure with its rule id. Detail is static text
// naming what was wrong; it never quotes the input.
type Error struct {
	Rule   Rule
	Detail string
}

func (e *Error) Error() string { return fmt.Sprintf("wire: %s: %s", e.Rule, e.Detail) }

func fail(r Rule, detail string) *Error { return &Error{Rule: r, Detail: detail} }

// Failures of the strict walk (strict.go), all malformed. They are
// sentinels so that another contract can map them onto its own
// vocabulary: the relay answers ErrDuplicateKey with its duplicate-key
// detail and the others with not-json-object.
var (
	ErrNotJSON      = fail(Malformed, "not valid JSON")
	ErrNotUTF8      = fail(Malformed, "not valid UTF-8")
	ErrTrailingData = fail(Malformed, "trailing data after the JSON value")
	ErrTooDeep      = fail(Malformed, "nested too deeply")
	ErrDuplicateKey = fail(Malformed, "duplicate key")
	ErrNotObject    = fail(Malformed, "not a JSON object")
)

// RuleOf returns the rule id carried by err, or ExecThrew for an error that
// carries none: an executor failure nobody named is still a failure.
func RuleOf(err error) Rule {
	var e *Error
	if errors.As(err, &e) {
		return e.Rule
	}
	return ExecThrew
}
