// Package jmespath evaluates JMESPath expressions over jsvalue Values with the
// semantics of the TypeScript package @aws-lambda-powertools/jmespath@2.35.0 (a port
// of jmespath.py), including the Powertools functions powertools_json,
// powertools_base64 and powertools_base64_gzip. Results keep JavaScript object key
// order, undefined and double-precision numbers, so they hash like the reference.
package jmespath

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/cairn-go/cairn/internal/jsvalue"
)

// ErrSyntax reports an expression that does not parse.
var ErrSyntax = errors.New("jmespath: syntax error")

// ErrEval reports an evaluation failure (unknown function, wrong argument type or
// arity, invalid powertools_* input).
var ErrEval = errors.New("jmespath: evaluation error")

type tokType int

const (
	tEOF tokType = iota
	tUnquoted
	tQuoted
	tLiteral
	tRbracket
	tRparen
	tComma
	tRbrace
	tNumber
	tCurrent
	tExpref
	tColon
	tPipe
	tOr
	tAnd
	tEQ
	tGT
	tLT
	tGTE
	tLTE
	tNE
	tFlatten
	tStar
	tFilter
	tDot
	tNot
	tLbrace
	tLbracket
	tLparen
)

var bindingPower = map[tokType]int{
	tPipe: 1, tOr: 2, tAnd: 3, tEQ: 5, tGT: 5, tLT: 5, tGTE: 5, tLTE: 5, tNE: 5,
	tFlatten: 9, tStar: 20, tFilter: 21, tDot: 40, tNot: 45, tLbrace: 50, tLbracket: 55, tLparen: 60,
}

type token struct {
	typ tokType
	str string        // identifier text
	num int           // number value
	lit jsvalue.Value // literal value
	pos int
}

func syntaxErr(pos int, format string, args ...any) error {
	return fmt.Errorf("%w at %d: %s", ErrSyntax, pos, fmt.Sprintf(format, args...))
}

func isIdentStart(c byte) bool {
	return c == '_' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')
}

func isIdentChar(c byte) bool { return isIdentStart(c) || (c >= '0' && c <= '9') }

func lex(expr string) ([]token, error) {
	var toks []token
	i := 0
	for i < len(expr) {
		c := expr[i]
		start := i
		simple := func(t tokType, n int) {
			toks = append(toks, token{typ: t, pos: start})
			i += n
		}
		switch {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r':
			i++
		case isIdentStart(c):
			j := i + 1
			for j < len(expr) && isIdentChar(expr[j]) {
				j++
			}
			toks = append(toks, token{typ: tUnquoted, str: expr[i:j], pos: start})
			i = j
		case c == '.':
			simple(tDot, 1)
		case c == '*':
			simple(tStar, 1)
		case c == ']':
			simple(tRbracket, 1)
		case c == ',':
			simple(tComma, 1)
		case c == ':':
			simple(tColon, 1)
		case c == '@':
			simple(tCurrent, 1)
		case c == '(':
			simple(tLparen, 1)
		case c == ')':
			simple(tRparen, 1)
		case c == '{':
			simple(tLbrace, 1)
		case c == '}':
			simple(tRbrace, 1)
		case c == '[':
			switch {
			case strings.HasPrefix(expr[i:], "[]"):
				simple(tFlatten, 2)
			case strings.HasPrefix(expr[i:], "[?"):
				simple(tFilter, 2)
			default:
				simple(tLbracket, 1)
			}
		case c == '|':
			if strings.HasPrefix(expr[i:], "||") {
				simple(tOr, 2)
			} else {
				simple(tPipe, 1)
			}
		case c == '&':
			if strings.HasPrefix(expr[i:], "&&") {
				simple(tAnd, 2)
			} else {
				simple(tExpref, 1)
			}
		case c == '!':
			if strings.HasPrefix(expr[i:], "!=") {
				simple(tNE, 2)
			} else {
				simple(tNot, 1)
			}
		case c == '=':
			if !strings.HasPrefix(expr[i:], "==") {
				return nil, syntaxErr(i, "unknown token '='")
			}
			simple(tEQ, 2)
		case c == '<':
			if strings.HasPrefix(expr[i:], "<=") {
				simple(tLTE, 2)
			} else {
				simple(tLT, 1)
			}
		case c == '>':
			if strings.HasPrefix(expr[i:], ">=") {
				simple(tGTE, 2)
			} else {
				simple(tGT, 1)
			}
		case c == '-' || (c >= '0' && c <= '9'):
			j := i + 1
			for j < len(expr) && expr[j] >= '0' && expr[j] <= '9' {
				j++
			}
			n, err := strconv.Atoi(expr[i:j])
			if err != nil {
				return nil, syntaxErr(i, "invalid number %q", expr[i:j])
			}
			toks = append(toks, token{typ: tNumber, num: n, pos: start})
			i = j
		case c == '"':
			j, err := scanDelimited(expr, i, '"')
			if err != nil {
				return nil, err
			}
			v, perr := jsvalue.Parse([]byte(expr[i:j]))
			if perr != nil || v.Kind != jsvalue.String {
				return nil, syntaxErr(i, "invalid quoted identifier %s", expr[i:j])
			}
			toks = append(toks, token{typ: tQuoted, str: v.S, pos: start})
			i = j
		case c == '\'':
			j, err := scanDelimited(expr, i, '\'')
			if err != nil {
				return nil, err
			}
			raw := strings.ReplaceAll(expr[i+1:j-1], `\'`, `'`)
			toks = append(toks, token{typ: tLiteral, lit: jsvalue.Str(jsvalue.FromGo(raw)), pos: start})
			i = j
		case c == '`':
			j, err := scanDelimited(expr, i, '`')
			if err != nil {
				return nil, err
			}
			raw := strings.ReplaceAll(expr[i+1:j-1], "\\`", "`")
			v, perr := jsvalue.Parse([]byte(strings.TrimSpace(raw)))
			if perr != nil {
				return nil, syntaxErr(i, "invalid JSON literal %s: %v", raw, perr)
			}
			toks = append(toks, token{typ: tLiteral, lit: v, pos: start})
			i = j
		default:
			return nil, syntaxErr(i, "unknown character %q", c)
		}
	}
	toks = append(toks, token{typ: tEOF, pos: len(expr)})
	return toks, nil
}

// scanDelimited returns the index just past the closing delimiter of a token that
// starts at expr[i], honouring backslash escapes.
func scanDelimited(expr string, i int, delim byte) (int, error) {
	j := i + 1
	for j < len(expr) {
		switch expr[j] {
		case '\\':
			j += 2
			continue
		case delim:
			return j + 1, nil
		}
		j++
	}
	return 0, syntaxErr(i, "unterminated %c", delim)
}
