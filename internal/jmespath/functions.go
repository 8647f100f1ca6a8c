package jmespath

import (
	"bytes"
	"compress/gzip"
	"encoding/base64"
	"fmt"
	"io"
	"math"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/cairn-go/cairn/internal/jsvalue"
)

type arg struct {
	v    jsvalue.Value
	expr *node // set for &expression arguments
}

type function struct {
	specs    [][]string
	variadic bool
	call     func(in *interp, args []arg) (jsvalue.Value, error)
}

var functions map[string]function

func init() {
	num := func(f func(float64) float64) func(*interp, []arg) (jsvalue.Value, error) {
		return func(in *interp, a []arg) (jsvalue.Value, error) { return jsvalue.Num(f(a[0].v.N)), nil }
	}
	functions = map[string]function{
		"abs":   {specs: [][]string{{"number"}}, call: num(math.Abs)},
		"ceil":  {specs: [][]string{{"number"}}, call: num(math.Ceil)},
		"floor": {specs: [][]string{{"number"}}, call: num(math.Floor)},
		"avg": {specs: [][]string{{"array-number"}}, call: func(in *interp, a []arg) (jsvalue.Value, error) {
			return jsvalue.Num(sum(a[0].v.Arr) / float64(len(a[0].v.Arr))), nil
		}},
		"sum": {specs: [][]string{{"array-number"}}, call: func(in *interp, a []arg) (jsvalue.Value, error) {
			return jsvalue.Num(sum(a[0].v.Arr)), nil
		}},
		"contains": {specs: [][]string{{"array", "string"}, {"any"}}, call: func(_ *interp, a []arg) (jsvalue.Value, error) { return fnContains(a) }},
		"ends_with": {specs: [][]string{{"string"}, {"string"}}, call: func(in *interp, a []arg) (jsvalue.Value, error) {
			return jsvalue.BoolOf(strings.HasSuffix(a[0].v.S, a[1].v.S)), nil
		}},
		"starts_with": {specs: [][]string{{"string"}, {"string"}}, call: func(in *interp, a []arg) (jsvalue.Value, error) {
			return jsvalue.BoolOf(strings.HasPrefix(a[0].v.S, a[1].v.S)), nil
		}},
		"join": {specs: [][]string{{"string"}, {"array-string"}}, call: func(in *interp, a []arg) (jsvalue.Value, error) {
			parts := make([]string, len(a[1].v.Arr))
			for i, e := range a[1].v.Arr {
				parts[i] = e.S
			}
			return jsvalue.Str(strings.Join(parts, a[0].v.S)), nil
		}},
		"keys": {specs: [][]string{{"object"}}, call: func(in *interp, a []arg) (jsvalue.Value, error) {
			keys := a[0].v.Obj.Keys()
			out := make([]jsvalue.Value, len(keys))
			for i, k := range keys {
				out[i] = jsvalue.Str(k)
			}
			return jsvalue.ArrayOf(out), nil
		}},
		"values": {specs: [][]string{{"object"}}, call: func(in *interp, a []arg) (jsvalue.Value, error) {
			return jsvalue.ArrayOf(a[0].v.Obj.Values()), nil
		}},
		"length": {specs: [][]string{{"array", "string", "object"}}, call: func(in *interp, a []arg) (jsvalue.Value, error) {
			switch v := a[0].v; v.Kind {
			case jsvalue.Object:
				return jsvalue.Num(float64(v.Obj.Len())), nil
			case jsvalue.String:
				return jsvalue.Num(float64(len(jsvalue.ToUTF16(v.S)))), nil
			default:
				return jsvalue.Num(float64(len(v.Arr))), nil
			}
		}},
		"map": {specs: [][]string{{"expression"}, {"array"}}, call: func(in *interp, a []arg) (jsvalue.Value, error) {
			out := make([]jsvalue.Value, len(a[1].v.Arr))
			for i, e := range a[1].v.Arr {
				r, err := in.visit(a[0].expr, e)
				if err != nil {
					return jsvalue.Value{}, err
				}
				if !r.Truthy() { // expression.visit(arg) || null
					r = jsvalue.NullValue
				}
				out[i] = r
			}
			return jsvalue.ArrayOf(out), nil
		}},
		"max":    {specs: [][]string{{"array-number", "array-string"}}, call: func(in *interp, a []arg) (jsvalue.Value, error) { return extreme(a[0].v.Arr, 1), nil }},
		"min":    {specs: [][]string{{"array-number", "array-string"}}, call: func(in *interp, a []arg) (jsvalue.Value, error) { return extreme(a[0].v.Arr, -1), nil }},
		"max_by": {specs: [][]string{{"array"}, {"expression"}}, call: func(in *interp, a []arg) (jsvalue.Value, error) { return in.extremeBy(a, 1) }},
		"min_by": {specs: [][]string{{"array"}, {"expression"}}, call: func(in *interp, a []arg) (jsvalue.Value, error) { return in.extremeBy(a, -1) }},
		"merge": {specs: [][]string{{"object"}}, variadic: true, call: func(in *interp, a []arg) (jsvalue.Value, error) {
			o := jsvalue.NewObj()
			for _, x := range a {
				for _, k := range x.v.Obj.Keys() {
					v, _ := x.v.Obj.Get(k)
					o.Define(k, v) // object spread creates own properties, even "__proto__"
				}
			}
			return jsvalue.ObjectOf(o), nil
		}},
		"not_null": {specs: [][]string{}, variadic: true, call: func(in *interp, a []arg) (jsvalue.Value, error) {
			for _, x := range a {
				if x.v.Kind != jsvalue.Null {
					if !x.v.Truthy() { // args.find(...) || null
						return jsvalue.NullValue, nil
					}
					return x.v, nil
				}
			}
			return jsvalue.NullValue, nil
		}},
		"reverse": {specs: [][]string{{"string", "array"}}, call: func(in *interp, a []arg) (jsvalue.Value, error) {
			if a[0].v.Kind == jsvalue.Array {
				out := slices.Clone(a[0].v.Arr)
				slices.Reverse(out)
				return jsvalue.ArrayOf(out), nil
			}
			u := jsvalue.ToUTF16(a[0].v.S) // split('') splits UTF-16 code units
			slices.Reverse(u)
			return jsvalue.Str(jsvalue.FromUTF16(u)), nil
		}},
		"sort": {specs: [][]string{{"array-number", "array-string"}}, call: func(in *interp, a []arg) (jsvalue.Value, error) {
			out := slices.Clone(a[0].v.Arr)
			sort.SliceStable(out, func(i, j int) bool { return less(out[i], out[j]) })
			return jsvalue.ArrayOf(out), nil
		}},
		"sort_by": {specs: [][]string{{"array"}, {"expression"}}, call: func(in *interp, a []arg) (jsvalue.Value, error) { return in.fnSortBy(a) }},
		"to_array": {specs: [][]string{{"any"}}, call: func(in *interp, a []arg) (jsvalue.Value, error) {
			if a[0].v.Kind == jsvalue.Array {
				return a[0].v, nil
			}
			return jsvalue.ArrayOf([]jsvalue.Value{a[0].v}), nil
		}},
		"to_number": {specs: [][]string{{"any"}}, call: func(in *interp, a []arg) (jsvalue.Value, error) {
			switch v := a[0].v; v.Kind {
			case jsvalue.Number:
				return v, nil
			case jsvalue.String:
				f := stringToNumber(v.S)
				if math.IsNaN(f) {
					return jsvalue.NullValue, nil
				}
				return jsvalue.Num(f), nil
			}
			return jsvalue.NullValue, nil
		}},
		"to_string": {specs: [][]string{{"any"}}, call: func(in *interp, a []arg) (jsvalue.Value, error) {
			if a[0].v.Kind == jsvalue.String {
				return a[0].v, nil
			}
			out, ok := jsvalue.Stringify(a[0].v)
			if !ok {
				return jsvalue.Value{}, nil
			}
			return jsvalue.Str(string(out)), nil
		}},
		"type": {specs: [][]string{{"any"}}, call: func(in *interp, a []arg) (jsvalue.Value, error) {
			return jsvalue.Str(typeName(a[0].v)), nil
		}},
		// Powertools functions. The reference swallows their runtime failures (bad
		// base64, bad gzip, bad JSON), so the call evaluates to undefined.
		"powertools_json": {specs: [][]string{{"string"}}, call: func(in *interp, a []arg) (jsvalue.Value, error) {
			v, err := jsvalue.ParseWTF8([]byte(a[0].v.S))
			if err != nil {
				return jsvalue.Value{}, nil
			}
			return v, nil
		}},
		"powertools_base64": {specs: [][]string{{"string"}}, call: func(in *interp, a []arg) (jsvalue.Value, error) {
			b, ok := fromBase64(a[0].v.S)
			if !ok {
				return jsvalue.Value{}, nil
			}
			return jsvalue.Str(jsvalue.FromGo(string(b))), nil
		}},
		"powertools_base64_gzip": {specs: [][]string{{"string"}}, call: func(in *interp, a []arg) (jsvalue.Value, error) {
			b, ok := fromBase64(a[0].v.S)
			if !ok {
				return jsvalue.Value{}, nil
			}
			zr, err := gzip.NewReader(bytes.NewReader(b))
			if err != nil {
				return jsvalue.Value{}, nil
			}
			out, err := io.ReadAll(io.LimitReader(zr, 64<<20))
			if err != nil {
				return jsvalue.Value{}, nil
			}
			return jsvalue.Str(jsvalue.FromGo(string(out))), nil
		}},
	}
}

var base64Re = regexp.MustCompile(`^[A-Za-z0-9+/]*={0,2}$`)

// fromBase64 is the reference's fromBase64 validation followed by Buffer.from(…, 'base64').
func fromBase64(s string) ([]byte, bool) {
	if (len(s)*3)%4 != 0 || !base64Re.MatchString(s) {
		return nil, false
	}
	b, err := base64.StdEncoding.DecodeString(s)
	if err != nil {
		return nil, false
	}
	return b, true
}

func sum(xs []jsvalue.Value) float64 {
	var t float64
	for _, x := range xs {
		t += x.N
	}
	return t
}

func less(a, b jsvalue.Value) bool {
	if a.Kind == jsvalue.String && b.Kind == jsvalue.String {
		return jsvalue.CompareUTF16(jsvalue.ToUTF16(a.S), jsvalue.ToUTF16(b.S)) < 0
	}
	return a.N < b.N
}

func extreme(xs []jsvalue.Value, sign int) jsvalue.Value {
	if len(xs) == 0 {
		return jsvalue.NullValue
	}
	best := xs[0]
	for _, x := range xs[1:] {
		if (sign > 0 && less(best, x)) || (sign < 0 && less(x, best)) {
			best = x
		}
	}
	return best
}

func (in *interp) extremeBy(a []arg, sign int) (jsvalue.Value, error) {
	if len(a[0].v.Arr) == 0 {
		return jsvalue.NullValue, nil
	}
	var best, bestKey jsvalue.Value
	for i, e := range a[0].v.Arr {
		k, err := in.visit(a[1].expr, e)
		if err != nil {
			return jsvalue.Value{}, err
		}
		if k.Kind != jsvalue.String && k.Kind != jsvalue.Number {
			return jsvalue.Value{}, fmt.Errorf("%w: expected string or number from expression, got %s", ErrEval, typeName(k))
		}
		if i == 0 || (sign > 0 && less(bestKey, k)) || (sign < 0 && less(k, bestKey)) {
			best, bestKey = e, k
		}
	}
	return best, nil
}

func (in *interp) fnSortBy(a []arg) (jsvalue.Value, error) {
	type keyed struct{ v, k jsvalue.Value }
	items := make([]keyed, len(a[0].v.Arr))
	for i, e := range a[0].v.Arr {
		k, err := in.visit(a[1].expr, e)
		if err != nil {
			return jsvalue.Value{}, err
		}
		if k.Kind != jsvalue.String && k.Kind != jsvalue.Number {
			return jsvalue.Value{}, fmt.Errorf("%w: expected string or number from expression, got %s", ErrEval, typeName(k))
		}
		items[i] = keyed{e, k}
	}
	sort.SliceStable(items, func(i, j int) bool { return less(items[i].k, items[j].k) })
	out := make([]jsvalue.Value, len(items))
	for i, it := range items {
		out[i] = it.v
	}
	return jsvalue.ArrayOf(out), nil
}

func fnContains(a []arg) (jsvalue.Value, error) {
	h, n := a[0].v, a[1].v
	if h.Kind == jsvalue.Array {
		for _, e := range h.Arr {
			// Array.prototype.includes compares objects by identity; values parsed from
			// JSON are never identical objects here, so only primitives can match.
			if e.Kind != jsvalue.Array && e.Kind != jsvalue.Object && strictEqual(e, n) {
				return jsvalue.True, nil
			}
		}
		return jsvalue.False, nil
	}
	return jsvalue.BoolOf(strings.Contains(h.S, jsToString(n))), nil
}

// jsToString is the String(value) conversion String.prototype.includes applies.
func jsToString(v jsvalue.Value) string {
	switch v.Kind {
	case jsvalue.Undefined:
		return "undefined"
	case jsvalue.Null:
		return "null"
	case jsvalue.Bool:
		return strconv.FormatBool(v.B)
	case jsvalue.Number:
		return jsvalue.FormatNumber(v.N)
	case jsvalue.String:
		return v.S
	case jsvalue.Array:
		parts := make([]string, len(v.Arr))
		for i, e := range v.Arr {
			if e.Kind != jsvalue.Null && e.Kind != jsvalue.Undefined {
				parts[i] = jsToString(e)
			}
		}
		return strings.Join(parts, ",")
	}
	return "[object Object]"
}

func typeName(v jsvalue.Value) string {
	switch v.Kind {
	case jsvalue.Array:
		return "array"
	case jsvalue.Object:
		return "object"
	case jsvalue.String:
		return "string"
	case jsvalue.Number:
		return "number"
	case jsvalue.Bool:
		return "boolean"
	case jsvalue.Null:
		return "null"
	}
	return "unknown"
}

var decimalRe = regexp.MustCompile(`^[+-]?(?:Infinity|(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?)$`)

// stringToNumber is JavaScript's Number(string).
func stringToNumber(s string) float64 {
	s = strings.TrimFunc(s, func(r rune) bool {
		switch r {
		case '\t', '\n', '\v', '\f', '\r', ' ', 0xA0, 0x1680, 0x2028, 0x2029, 0x202F, 0x205F, 0x3000, 0xFEFF:
			return true
		}
		return r >= 0x2000 && r <= 0x200A
	})
	if s == "" {
		return 0
	}
	if len(s) > 2 && s[0] == '0' {
		base := 0
		switch s[1] {
		case 'x', 'X':
			base = 16
		case 'o', 'O':
			base = 8
		case 'b', 'B':
			base = 2
		}
		if base != 0 {
			digits := s[2:]
			var f float64
			for _, c := range digits {
				d, err := strconv.ParseUint(string(c), base, 8)
				if err != nil {
					return math.NaN()
				}
				f = f*float64(base) + float64(d)
			}
			return f
		}
	}
	if !decimalRe.MatchString(s) {
		return math.NaN()
	}
	switch strings.TrimLeft(s, "+") {
	case "Infinity":
		return math.Inf(1)
	case "-Infinity":
		return math.Inf(-1)
	}
	f, _ := strconv.ParseFloat(s, 64)
	return f
}

func matchesType(a arg, t string) bool {
	if t == "expression" {
		return a.expr != nil
	}
	if a.expr != nil {
		return t == "any"
	}
	v := a.v
	switch t {
	case "any":
		return true
	case "number":
		return v.Kind == jsvalue.Number
	case "string":
		return v.Kind == jsvalue.String
	case "boolean":
		return v.Kind == jsvalue.Bool
	case "object":
		return v.Kind == jsvalue.Object
	case "array":
		return v.Kind == jsvalue.Array
	case "array-number", "array-string":
		if v.Kind != jsvalue.Array {
			return false
		}
		want := jsvalue.Number
		if t == "array-string" {
			want = jsvalue.String
		}
		for _, e := range v.Arr {
			if e.Kind != want {
				return false
			}
		}
		return true
	}
	return false
}

func (in *interp) callFunction(n *node, v jsvalue.Value) (jsvalue.Value, error) {
	f, builtin := functions[n.name]
	args := make([]arg, len(n.children))
	for i, c := range n.children {
		if c.typ == nExpref {
			args[i] = arg{expr: c.children[0]}
			continue
		}
		r, err := in.visit(c, v)
		if err != nil {
			return jsvalue.Value{}, err
		}
		args[i] = arg{v: r}
	}
	if !builtin {
		vals := make([]jsvalue.Value, len(args))
		for i, a := range args {
			if a.expr != nil {
				return jsvalue.Value{}, fmt.Errorf("%w: custom function %s() does not take expression references", ErrEval, n.name)
			}
			vals[i] = a.v
		}
		r, err := in.custom[n.name](vals)
		if err != nil {
			return jsvalue.Value{}, fmt.Errorf("%w: %s(): %w", ErrEval, n.name, err)
		}
		return r, nil
	}
	if f.variadic && len(args) < len(f.specs) || !f.variadic && len(args) != len(f.specs) {
		return jsvalue.Value{}, fmt.Errorf("%w: %s() takes %d arguments, got %d", ErrEval, n.name, len(f.specs), len(args))
	}
	for i, a := range args {
		if len(f.specs) == 0 {
			break
		}
		spec := f.specs[min(i, len(f.specs)-1)]
		if !slices.ContainsFunc(spec, func(t string) bool { return matchesType(a, t) }) {
			return jsvalue.Value{}, fmt.Errorf("%w: invalid type for argument %d of %s(): expected %s, got %s", ErrEval, i+1, n.name, strings.Join(spec, " or "), typeName(a.v))
		}
	}
	return f.call(in, args)
}
