package toolschema

import (
	"errors"
	"fmt"
	"maps"
	"net/url"
	"slices"
	"strconv"
	"strings"
)

// MaxSchemaNodes bounds a tool's inputSchema as validation will see it:
// the number of JSON values with every $ref replaced by what it points
// to. Validating one instance costs at most about this many schema nodes
// per instance value (times a pattern's program, see MaxPatternInsts), so
// with args capped in size the cost of a call's validation is bounded
// before any call is made. See RATIONALE.md, "Why bound a tool schema's
// expanded size, and refuse recursive ones?".
const MaxSchemaNodes = 10_000

var (
	// errSchemaTooComplex: the expanded schema is over the bound, or a
	// $ref leads back into itself (its expansion has no end).
	errSchemaTooComplex = errors.New("expanded schema over the node bound")
	// errSchemaRef: a reference the walker cannot follow inside the
	// document, so its cost cannot be counted.
	errSchemaRef = errors.New("reference outside the schema document")
)

// checkSchemaCost walks doc (a schema as jsonschema.UnmarshalJSON reads
// it) counting its expanded nodes, and stops as soon as the count passes
// limit, so a schema built to explode costs at most limit steps here.
// Only JSON-pointer $refs into the document itself are followed; remote
// refs, anchors, $dynamicRef/$recursiveRef and nested $id (which would
// change what a "#/..." ref means) are refused, and so is any recursive
// $ref: a recursive tool schema is not admitted.
func checkSchemaCost(doc any, limit int) error {
	w := &schemaWalk{root: doc, left: limit}
	return w.node(doc, "")
}

// schemaWalk is one checkSchemaCost run. sites are the locations of the
// $refs being expanded, outermost first.
type schemaWalk struct {
	root  any
	left  int
	sites []string
}

// node counts v, found at JSON pointer loc, and everything under it.
func (w *schemaWalk) node(v any, loc string) error {
	if w.left--; w.left < 0 {
		return errSchemaTooComplex
	}
	switch x := v.(type) {
	case map[string]any:
		for _, k := range slices.Sorted(maps.Keys(x)) {
			if err := w.keyword(k, x[k], loc); err != nil {
				return err
			}
			if err := w.node(x[k], loc+"/"+escapePointer(k)); err != nil {
				return err
			}
		}
	case []any:
		for i, e := range x {
			if err := w.node(e, loc+"/"+strconv.Itoa(i)); err != nil {
				return err
			}
		}
	}
	return nil
}

// keyword handles the reference keywords of the object at loc; a key
// whose value is not a string is a property name, not a keyword.
func (w *schemaWalk) keyword(k string, v any, loc string) error {
	s, ok := v.(string)
	if !ok {
		return nil
	}
	switch k {
	case "$ref":
		return w.ref(s, loc)
	case "$dynamicRef", "$recursiveRef":
		return fmt.Errorf("%w: %s is not admitted", errSchemaRef, k)
	case "$id":
		if loc != "" {
			return fmt.Errorf("%w: $id below the root", errSchemaRef)
		}
	}
	return nil
}

// ref expands the $ref at loc: refused when its target contains loc or
// any $ref being expanded (a cycle), else counted where it is used.
func (w *schemaWalk) ref(ref, loc string) error {
	target, v, err := w.resolve(ref)
	if err != nil {
		return err
	}
	w.sites = append(w.sites, loc)
	defer func() { w.sites = w.sites[:len(w.sites)-1] }()
	for _, site := range w.sites {
		if site == target || strings.HasPrefix(site, target+"/") || target == "" {
			return fmt.Errorf("%w: $ref %q is recursive", errSchemaTooComplex, ref)
		}
	}
	return w.node(v, target)
}

// resolve follows a "#/..." JSON pointer from the root; it returns the
// pointer in canonical (escaped) form and the value it names.
func (w *schemaWalk) resolve(ref string) (string, any, error) {
	frag, ok := strings.CutPrefix(ref, "#")
	if !ok {
		return "", nil, fmt.Errorf("%w: $ref %q", errSchemaRef, ref)
	}
	frag, err := url.PathUnescape(frag)
	if err != nil || (frag != "" && !strings.HasPrefix(frag, "/")) {
		return "", nil, fmt.Errorf("%w: $ref %q is not a JSON pointer", errSchemaRef, ref)
	}
	v, canon := w.root, ""
	if frag == "" {
		return canon, v, nil
	}
	for _, tok := range strings.Split(frag[1:], "/") {
		tok = strings.NewReplacer("~1", "/", "~0", "~").Replace(tok)
		switch x := v.(type) {
		case map[string]any:
			v, ok = x[tok]
		case []any:
			i, err := strconv.Atoi(tok)
			ok = err == nil && i >= 0 && i < len(x)
			if ok {
				v = x[i]
			}
		default:
			ok = false
		}
		if !ok {
			return "", nil, fmt.Errorf("%w: $ref %q names nothing", errSchemaRef, ref)
		}
		canon += "/" + escapePointer(tok)
	}
	return canon, v, nil
}

// escapePointer escapes one JSON pointer token.
func escapePointer(tok string) string {
	return strings.NewReplacer("~", "~0", "/", "~1").Replace(tok)
}
