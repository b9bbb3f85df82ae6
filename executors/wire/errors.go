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

// RuleOf returns the rule id carried by err, or ExecThrew for an error that
// carries none: an executor failure nobody named is still a failure.
func RuleOf(err error) Rule {
	var e *Error
	if errors.As(err, &e) {
		return e.Rule
	}
	return ExecThrew
}
