package testkit

import (
	"fmt"
	"strings"
)

// SchemaBomb is an inputSchema of n levels of anyOf over two $refs to the
// next level: validating {} against it explores 2^n branches.
func SchemaBomb(n int) string {
	var b strings.Builder
	b.WriteString(`{"$ref":"#/$defs/a0","$defs":{`)
	for i := range n {
		fmt.Fprintf(&b, `"a%d":{"anyOf":[{"$ref":"#/$defs/a%d"},{"$ref":"#/$defs/a%d"}]},`, i, i+1, i+1)
	}
	fmt.Fprintf(&b, `"a%d":{"type":"string"}}}`, n)
	return b.String()
}

// EnumSchema is a schema of exactly nodes expanded nodes (nodes >= 3):
// the root object, its enum array and nodes-2 numbers.
func EnumSchema(nodes int) string {
	return `{"enum":[0` + strings.Repeat(",0", nodes-3) + `]}`
}
