package toolschema

import (
	"errors"
	"slices"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/santhosh-tekuri/jsonschema/v6/kind"

	"github.com/airlock/airlock/executors/wire"
)

// Why names what failed the schema (PROTOCOL section 8): "<JSON Pointer
// of the failing value>: <schema keyword>", for example "/b: required" or
// "/path: type"; err is what Validate returned, and fallback is the why
// when it is not a *jsonschema.ValidationError (the rule's static text).
// It is the why of args-invalid for an inputSchema and of output-invalid
// for an outputSchema. Keys the schema does not allow come first, by
// name with the keys it does: `unexpected key "pth"; allowed: path;
// /path: required`, as a misspelt key is the likeliest cause of the
// rest. It is built only from the schema's keywords and property names
// and the keys and indexes on the way to the value, never from a value,
// so it cannot echo a secret passed as an argument or returned by a tool.
//
// The validator reports every failure, in an order that follows Go's map
// iteration; of them it names the deepest (the most specific), ties
// broken by pointer then keyword, so the same instance always reads the
// same. anyOf and oneOf are named as such rather than by one branch's
// failure, which would tell the caller to fix something another branch
// does not need.
func (s *Schema) Why(err error, fallback string) string {
	var ve *jsonschema.ValidationError
	if !errors.As(err, &ve) {
		return fallback
	}
	var best, extra *cause
	for c := range causes(ve) {
		switch {
		case c.extra != nil:
			if extra == nil || c.before(*extra) {
				extra = &c
			}
		case best == nil || c.before(*best):
			best = &c
		}
	}
	switch {
	case extra != nil:
		head := extra.unexpected(s)
		if best == nil {
			return head
		}
		return head + "; " + best.why(wire.MaxWhyBytes-len(head)-len("; "))
	case best != nil:
		return best.why(wire.MaxWhyBytes)
	}
	return fallback
}

// cause is one failure: where (the pointer's reference tokens) and
// which keyword. For additionalProperties, extra holds the keys the
// schema at schemaURL does not allow.
type cause struct {
	tokens    []string
	keyword   string
	extra     []string
	schemaURL string
}

// maxKeysInWhy and maxKeyBytes bound the unexpected keys a why lists, and each key's length in it.
const (
	maxKeysInWhy = 4
	maxKeyBytes  = 64
)

// unexpected renders an additionalProperties failure within half of
// wire.MaxWhyBytes (the rest is for the other failure): the object's
// pointer unless it is the root, the unexpected keys (cleaned, cut, at
// most maxKeysInWhy) and the properties the schema declares there, when
// they are all it allows.
func (c cause) unexpected(s *Schema) string {
	var b strings.Builder
	if len(c.tokens) > 0 {
		b.WriteString(pointer(c.tokens))
		b.WriteString(": ")
	}
	b.WriteString("unexpected key")
	if len(c.extra) > 1 {
		b.WriteByte('s')
	}
	for i, k := range c.extra {
		if i > 0 {
			b.WriteString(",")
		}
		if i == maxKeysInWhy {
			b.WriteString(" …")
			break
		}
		b.WriteString(` "` + wire.CleanWhy(k, maxKeyBytes) + `"`)
	}
	switch allowed, ok := s.Properties(c.schemaURL); {
	case ok && len(allowed) == 0:
		b.WriteString("; allowed: none")
	case ok:
		b.WriteString("; allowed: " + strings.Join(allowed, ", "))
	}
	return wire.CleanWhy(b.String(), wire.MaxWhyBytes/2)
}

// before orders causes: deeper first, then by pointer, then by keyword.
func (c cause) before(o cause) bool {
	if len(c.tokens) != len(o.tokens) {
		return len(c.tokens) > len(o.tokens)
	}
	if n := slices.Compare(c.tokens, o.tokens); n != 0 {
		return n < 0
	}
	return c.keyword < o.keyword
}

// why renders the cause within limit bytes. A key is text from the
// caller: its control and bidirectional characters are dropped as in any
// why, and a pointer too long to fit is cut, never the keyword.
func (c cause) why(limit int) string {
	suffix := ": " + c.keyword
	return wire.CleanWhy(pointer(c.tokens), limit-len(suffix)) + suffix
}

// pointer is the JSON Pointer of tokens.
func pointer(tokens []string) string {
	var p strings.Builder
	for _, t := range tokens {
		p.WriteByte('/')
		p.WriteString(pointerEscape.Replace(t))
	}
	return p.String()
}

// pointerEscape escapes a reference token (RFC 6901).
var pointerEscape = strings.NewReplacer("~", "~0", "/", "~1")

// causes yields the leaf failures of e. Containers (the whole schema,
// a group of failures, a $ref, allOf) stand for their causes; every other
// keyword is a leaf.
func causes(e *jsonschema.ValidationError) func(yield func(cause) bool) {
	return func(yield func(cause) bool) {
		var walk func(e *jsonschema.ValidationError) bool
		walk = func(e *jsonschema.ValidationError) bool {
			switch e.ErrorKind.(type) {
			case *kind.Schema, *kind.Group, *kind.Reference, *kind.AllOf:
				if len(e.Causes) > 0 {
					for _, c := range e.Causes {
						if !walk(c) {
							return false
						}
					}
					return true
				}
			}
			return yield(leafCause(e))
		}
		walk(e)
	}
}

// leafCause places a failure. Keywords about a property that is missing,
// extra or badly named point at that property (so "/b: required" says b
// is missing from the root object), the others at the value itself.
func leafCause(e *jsonschema.ValidationError) cause {
	c := cause{tokens: slices.Clip(e.InstanceLocation)}
	switch k := e.ErrorKind.(type) {
	case *kind.Required:
		c.keyword = "required"
		c.under(k.Missing)
	case *kind.Dependency:
		c.keyword = "dependencies"
		c.under(k.Missing)
	case *kind.DependentRequired:
		c.keyword = "dependentRequired"
		c.under(k.Missing)
	case *kind.AdditionalProperties:
		c.keyword = "additionalProperties"
		c.extra = slices.Sorted(slices.Values(k.Properties))
		c.schemaURL = e.SchemaURL
	case *kind.PropertyNames:
		c.keyword = "propertyNames"
		c.under([]string{k.Property})
	case *kind.Not:
		c.keyword = "not"
	case *kind.FalseSchema:
		c.keyword = "false"
	default:
		if kp := e.ErrorKind.KeywordPath(); len(kp) > 0 {
			c.keyword = kp[0]
		} else {
			c.keyword = "schema"
		}
	}
	return c
}

// under points the cause at the first of the named properties of the
// object it is at.
func (c *cause) under(names []string) {
	if len(names) > 0 {
		c.tokens = append(c.tokens, names[0])
	}
}
