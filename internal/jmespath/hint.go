package jmespath

import (
	"strings"

	"github.com/cairn-go/cairn/internal/jsvalue"
)

// EmbeddedJSON explains why an expression found nothing in data when the cause is JSON
// text held in a string, as in an API Gateway event whose body is a string: for an
// expression that is a chain of field names (body.id) it finds the first prefix whose
// value is a string holding a JSON object or array, and returns that prefix ("body",
// or "@" for data itself) and the expression rewritten to decode it
// (powertools_json(body).id). ok is false when no such string is on the path.
func (e *Expr) EmbeddedJSON(data jsvalue.Value) (at, rewritten string, ok bool) {
	var fields []string
	switch n := e.root; n.typ {
	case nField:
		fields = []string{n.name}
	case nSubexpression:
		for _, c := range n.children {
			if c.typ != nField {
				return "", "", false
			}
			fields = append(fields, c.name)
		}
	default:
		if holdsJSON(data) {
			return "@", "", true
		}
		return "", "", false
	}
	cur := data
	for i := 0; i <= len(fields); i++ {
		if holdsJSON(cur) {
			at := "@"
			if i > 0 {
				at = joinFields(fields[:i])
			}
			return at, "powertools_json(" + at + ")." + joinFields(fields[i:]), true
		}
		if i == len(fields) || cur.Kind != jsvalue.Object {
			return "", "", false
		}
		next, found := cur.Obj.Get(fields[i])
		if !found {
			return "", "", false
		}
		cur = next
	}
	return "", "", false
}

// holdsJSON reports whether v is a string whose text is a JSON object or array.
func holdsJSON(v jsvalue.Value) bool {
	if v.Kind != jsvalue.String {
		return false
	}
	s := strings.TrimLeft(v.S, " \t\r\n")
	if s == "" || (s[0] != '{' && s[0] != '[') {
		return false
	}
	_, err := jsvalue.ParseWTF8([]byte(s))
	return err == nil
}

// joinFields writes field names as a JMESPath sub-expression, quoting names that are
// not bare identifiers.
func joinFields(fields []string) string {
	var b strings.Builder
	for i, f := range fields {
		if i > 0 {
			b.WriteByte('.')
		}
		if isIdentifier(f) {
			b.WriteString(f)
		} else {
			b.Write(jsvalue.AppendQuoted(nil, f))
		}
	}
	return b.String()
}

func isIdentifier(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c == '_' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (i > 0 && c >= '0' && c <= '9') {
			continue
		}
		return false
	}
	return true
}
