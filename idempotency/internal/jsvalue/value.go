package jsvalue

import (
	"math"
	"sort"
	"strconv"
)

// Kind is the JavaScript type of a Value.
type Kind uint8

// The kinds a JSON-derived JavaScript value can have. Undefined appears only as the
// result of an expression (for example an ordering comparison of strings in JMESPath);
// JSON.stringify omits it inside objects and writes null for it inside arrays.
const (
	Undefined Kind = iota
	Null
	Bool
	Number
	String
	Array
	Object
	// Function is a function inherited from Object.prototype (toString, constructor…),
	// which a JMESPath field lookup can reach; S holds its name. JSON.stringify treats
	// it like undefined.
	Function
)

// Value is one JavaScript value. The zero Value is undefined.
type Value struct {
	Kind Kind
	B    bool
	N    float64
	// S holds a string as WTF-8: UTF-8 in which unpaired surrogate code units are
	// encoded as three-byte sequences, so that every UTF-16 string round-trips.
	S   string
	Arr []Value
	Obj *Obj
}

// NullValue, True, False and friends build Values.
var (
	NullValue = Value{Kind: Null}
	True      = Value{Kind: Bool, B: true}
	False     = Value{Kind: Bool, B: false}
)

// Num returns a number Value.
func Num(f float64) Value { return Value{Kind: Number, N: f} }

// Str returns a string Value from a Go (UTF-8 or WTF-8) string.
func Str(s string) Value { return Value{Kind: String, S: s} }

// ArrayOf returns an array Value.
func ArrayOf(items []Value) Value {
	if items == nil {
		items = []Value{}
	}
	return Value{Kind: Array, Arr: items}
}

// ObjectOf returns an object Value.
func ObjectOf(o *Obj) Value { return Value{Kind: Object, Obj: o} }

// BoolOf returns a boolean Value.
func BoolOf(b bool) Value {
	if b {
		return True
	}
	return False
}

// Truthy reports JavaScript truthiness: false, 0, -0, NaN, "", null and undefined are
// falsy; every object and array is truthy.
func (v Value) Truthy() bool {
	switch v.Kind {
	case Bool:
		return v.B
	case Number:
		return v.N != 0 && !math.IsNaN(v.N)
	case String:
		return v.S != ""
	case Array, Object, Function:
		return true
	default:
		return false
	}
}

// Obj is a JavaScript ordinary object holding own enumerable data properties.
type Obj struct {
	keys []string
	vals map[string]Value
}

// NewObj returns an empty object.
func NewObj() *Obj { return &Obj{vals: map[string]Value{}} }

// Define creates or replaces an own property the way JSON.parse and object spread do
// (CreateDataProperty): an existing key keeps its position, "__proto__" is an ordinary key.
func (o *Obj) Define(key string, v Value) {
	if _, ok := o.vals[key]; !ok {
		o.keys = append(o.keys, key)
	}
	o.vals[key] = v
}

// Assign performs obj[key] = v on an object whose prototype is Object.prototype:
// assigning "__proto__" invokes the inherited setter instead of creating a property,
// so the key never becomes an own property.
func (o *Obj) Assign(key string, v Value) {
	if key == "__proto__" {
		return
	}
	o.Define(key, v)
}

// Get returns an own property.
func (o *Obj) Get(key string) (Value, bool) {
	v, ok := o.vals[key]
	return v, ok
}

// Len returns the number of own properties.
func (o *Obj) Len() int { return len(o.keys) }

// Keys returns the own property keys in the order Object.keys returns them: array
// indices ascending, then the rest in insertion order.
func (o *Obj) Keys() []string {
	var idx []string
	var rest []string
	for _, k := range o.keys {
		if _, ok := arrayIndex(k); ok {
			idx = append(idx, k)
		} else {
			rest = append(rest, k)
		}
	}
	if len(idx) == 0 {
		return rest
	}
	sort.Slice(idx, func(i, j int) bool {
		a, _ := arrayIndex(idx[i])
		b, _ := arrayIndex(idx[j])
		return a < b
	})
	return append(idx, rest...)
}

// Values returns the own property values in Keys order.
func (o *Obj) Values() []Value {
	keys := o.Keys()
	out := make([]Value, len(keys))
	for i, k := range keys {
		out[i] = o.vals[k]
	}
	return out
}

// arrayIndex reports whether k is a canonical array index (0 … 2^32-2), which V8
// enumerates before all other string keys.
func arrayIndex(k string) (uint64, bool) {
	if k == "" || len(k) > 10 || (len(k) > 1 && k[0] == '0') {
		return 0, false
	}
	for i := 0; i < len(k); i++ {
		if k[i] < '0' || k[i] > '9' {
			return 0, false
		}
	}
	n, err := strconv.ParseUint(k, 10, 64)
	if err != nil || n >= math.MaxUint32 {
		return 0, false
	}
	return n, true
}
