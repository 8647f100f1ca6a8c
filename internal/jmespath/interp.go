package jmespath

import (
	"fmt"

	"github.com/cairn-go/cairn/internal/jsvalue"
)

// Expr is a compiled JMESPath expression. It is immutable and safe for concurrent use.
type Expr struct {
	src    string
	root   *node
	custom map[string]Func
	in     *interp // read-only, shared by concurrent searches
}

// Func is a custom function. It receives the evaluated arguments (expression
// references are not supported) and returns the result.
type Func func(args []jsvalue.Value) (jsvalue.Value, error)

// Compile parses expr. custom adds functions; a custom name may not shadow a built-in.
func Compile(expr string, custom ...map[string]Func) (*Expr, error) {
	root, err := parse(expr)
	if err != nil {
		return nil, err
	}
	e := &Expr{src: expr, root: root}
	for _, m := range custom {
		for name, f := range m {
			if _, builtin := functions[name]; builtin {
				return nil, fmt.Errorf("%w: custom function %s() shadows a built-in", ErrSyntax, name)
			}
			if e.custom == nil {
				e.custom = map[string]Func{}
			}
			e.custom[name] = f
		}
	}
	if err := e.checkFunctions(root); err != nil {
		return nil, err
	}
	e.in = &interp{custom: e.custom}
	return e, nil
}

// String returns the source expression.
func (e *Expr) String() string { return e.src }

// Search evaluates the expression against data.
func (e *Expr) Search(data jsvalue.Value) (jsvalue.Value, error) {
	return e.in.visit(e.root, data)
}

type interp struct{ custom map[string]Func }

// checkFunctions rejects unknown function names at compile time; the reference
// rejects them on first evaluation, which for a key expression is every request.
func (e *Expr) checkFunctions(n *node) error {
	if n.typ == nFunction {
		_, builtin := functions[n.name]
		_, custom := e.custom[n.name]
		if !builtin && !custom {
			return fmt.Errorf("%w: unknown function: %s()", ErrSyntax, n.name)
		}
	}
	for _, c := range n.children {
		if err := e.checkFunctions(c); err != nil {
			return err
		}
	}
	return nil
}

var objectPrototype = map[string]bool{
	"constructor": true, "hasOwnProperty": true, "isPrototypeOf": true, "propertyIsEnumerable": true,
	"toLocaleString": true, "toString": true, "valueOf": true, "__defineGetter__": true,
	"__defineSetter__": true, "__lookupGetter__": true, "__lookupSetter__": true,
}

// truthy is JMESPath truthiness as the reference implements it: every number is true.
func truthy(v jsvalue.Value) bool {
	switch v.Kind {
	case jsvalue.Number:
		return true
	case jsvalue.String:
		return v.S != ""
	case jsvalue.Bool:
		return v.B
	case jsvalue.Array:
		return len(v.Arr) > 0
	case jsvalue.Object:
		return v.Obj.Len() > 0
	}
	return false
}

// strictEqual is the reference's isStrictEqual (deep for arrays and objects).
func strictEqual(a, b jsvalue.Value) bool {
	if a.Kind != b.Kind {
		return false
	}
	switch a.Kind {
	case jsvalue.Undefined, jsvalue.Null:
		return true
	case jsvalue.Function:
		return a.S == b.S
	case jsvalue.Bool:
		return a.B == b.B
	case jsvalue.Number:
		return a.N == b.N
	case jsvalue.String:
		return a.S == b.S
	case jsvalue.Array:
		if len(a.Arr) != len(b.Arr) {
			return false
		}
		for i := range a.Arr {
			if !strictEqual(a.Arr[i], b.Arr[i]) {
				return false
			}
		}
		return true
	default:
		if a.Obj.Len() != b.Obj.Len() {
			return false
		}
		for _, k := range a.Obj.Keys() {
			av, _ := a.Obj.Get(k)
			bv, _ := b.Obj.Get(k)
			if !strictEqual(av, bv) {
				return false
			}
		}
		return true
	}
}

func (in *interp) visit(n *node, v jsvalue.Value) (jsvalue.Value, error) {
	switch n.typ {
	case nSubexpression, nIndexExpression, nPipe:
		result := v
		for _, c := range n.children {
			var err error
			if result, err = in.visit(c, result); err != nil {
				return jsvalue.Value{}, err
			}
		}
		return result, nil
	case nField:
		if n.name == "" || v.Kind != jsvalue.Object {
			return jsvalue.NullValue, nil
		}
		if f, ok := v.Obj.Get(n.name); ok {
			return f, nil
		}
		// The reference tests `name in value`, which sees Object.prototype.
		if n.name == "__proto__" {
			return jsvalue.ObjectOf(jsvalue.NewObj()), nil
		}
		if objectPrototype[n.name] {
			return jsvalue.Value{Kind: jsvalue.Function, S: n.name}, nil
		}
		return jsvalue.NullValue, nil
	case nComparator:
		l, err := in.visit(n.children[0], v)
		if err != nil {
			return jsvalue.Value{}, err
		}
		r, err := in.visit(n.children[1], v)
		if err != nil {
			return jsvalue.Value{}, err
		}
		switch n.cmp {
		case tEQ:
			return jsvalue.BoolOf(strictEqual(l, r)), nil
		case tNE:
			return jsvalue.BoolOf(!strictEqual(l, r)), nil
		}
		if l.Kind != jsvalue.Number || r.Kind != jsvalue.Number {
			return jsvalue.Value{}, nil // undefined, as in the reference
		}
		switch n.cmp {
		case tLT:
			return jsvalue.BoolOf(l.N < r.N), nil
		case tLTE:
			return jsvalue.BoolOf(l.N <= r.N), nil
		case tGT:
			return jsvalue.BoolOf(l.N > r.N), nil
		default:
			return jsvalue.BoolOf(l.N >= r.N), nil
		}
	case nCurrent, nIdentity:
		return v, nil
	case nExpref:
		return jsvalue.Value{}, fmt.Errorf("%w: expression reference used outside a function argument", ErrEval)
	case nFunction:
		return in.callFunction(n, v)
	case nFilterProjection:
		base, err := in.visit(n.children[0], v)
		if err != nil || base.Kind != jsvalue.Array {
			return jsvalue.NullValue, err
		}
		out := []jsvalue.Value{}
		for _, item := range base.Arr {
			c, err := in.visit(n.children[2], item)
			if err != nil {
				return jsvalue.Value{}, err
			}
			if !truthy(c) {
				continue
			}
			cur, err := in.visit(n.children[1], item)
			if err != nil {
				return jsvalue.Value{}, err
			}
			if cur.Kind != jsvalue.Null {
				out = append(out, cur)
			}
		}
		return jsvalue.ArrayOf(out), nil
	case nFlatten:
		base, err := in.visit(n.children[0], v)
		if err != nil || base.Kind != jsvalue.Array {
			return jsvalue.NullValue, err
		}
		out := []jsvalue.Value{}
		for _, item := range base.Arr {
			if item.Kind == jsvalue.Array {
				out = append(out, item.Arr...)
			} else {
				out = append(out, item)
			}
		}
		return jsvalue.ArrayOf(out), nil
	case nIndex:
		if v.Kind != jsvalue.Array {
			return jsvalue.NullValue, nil
		}
		i := n.index
		if i < 0 {
			i += len(v.Arr)
		}
		if i < 0 || i >= len(v.Arr) {
			return jsvalue.NullValue, nil
		}
		return v.Arr[i], nil
	case nSlice:
		if v.Kind != jsvalue.Array {
			return jsvalue.NullValue, nil
		}
		return jsvalue.ArrayOf(sliceArray(v.Arr, n.slice)), nil
	case nLiteral:
		return n.lit, nil
	case nMultiSelectObject:
		if v.Kind == jsvalue.Null {
			return jsvalue.NullValue, nil
		}
		o := jsvalue.NewObj()
		for i, c := range n.children {
			r, err := in.visit(c, v)
			if err != nil {
				return jsvalue.Value{}, err
			}
			o.Assign(n.keys[i], r)
		}
		return jsvalue.ObjectOf(o), nil
	case nMultiSelectList:
		if v.Kind == jsvalue.Null {
			return jsvalue.NullValue, nil
		}
		out := make([]jsvalue.Value, 0, len(n.children))
		for _, c := range n.children {
			r, err := in.visit(c, v)
			if err != nil {
				return jsvalue.Value{}, err
			}
			out = append(out, r)
		}
		return jsvalue.ArrayOf(out), nil
	case nOr, nAnd:
		l, err := in.visit(n.children[0], v)
		if err != nil {
			return jsvalue.Value{}, err
		}
		if truthy(l) == (n.typ == nOr) {
			return l, nil
		}
		return in.visit(n.children[1], v)
	case nNot:
		r, err := in.visit(n.children[0], v)
		if err != nil {
			return jsvalue.Value{}, err
		}
		return jsvalue.BoolOf(!truthy(r)), nil
	case nProjection, nValueProjection:
		base, err := in.visit(n.children[0], v)
		if err != nil {
			return jsvalue.Value{}, err
		}
		var items []jsvalue.Value
		switch {
		case n.typ == nProjection && base.Kind == jsvalue.Array:
			items = base.Arr
		case n.typ == nValueProjection && base.Kind == jsvalue.Object:
			items = base.Obj.Values()
		default:
			return jsvalue.NullValue, nil
		}
		out := []jsvalue.Value{}
		for _, item := range items {
			cur, err := in.visit(n.children[1], item)
			if err != nil {
				return jsvalue.Value{}, err
			}
			if cur.Kind != jsvalue.Null {
				out = append(out, cur)
			}
		}
		return jsvalue.ArrayOf(out), nil
	}
	return jsvalue.Value{}, fmt.Errorf("%w: invalid node", ErrEval)
}

func capSlice(length, v int, negStep bool) int {
	if v < 0 {
		v += length
		if v < 0 {
			if negStep {
				return -1
			}
			return 0
		}
	} else if v >= length {
		if negStep {
			return length - 1
		}
		return length
	}
	return v
}

func sliceArray(arr []jsvalue.Value, parts [3]*int) []jsvalue.Value {
	out := []jsvalue.Value{}
	if len(arr) == 0 {
		return out
	}
	step := 1
	if parts[2] != nil {
		step = *parts[2]
	}
	neg := step < 0
	start, end := 0, len(arr)
	if neg {
		start, end = len(arr)-1, -1
	}
	if parts[0] != nil {
		start = capSlice(len(arr), *parts[0], neg)
	}
	if parts[1] != nil {
		end = capSlice(len(arr), *parts[1], neg)
	}
	if step > 0 {
		for i := start; i < end; i += step {
			out = append(out, arr[i])
		}
	} else {
		for i := start; i > end; i += step {
			out = append(out, arr[i])
		}
	}
	return out
}
