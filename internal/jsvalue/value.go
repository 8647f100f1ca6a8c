package jsvalue

import (
	"math"
	"slices"
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
//
// Properties live in one slice in insertion order; lookups scan it while the object
// is small and use an index map once it grows, so parsing a typical request payload
// allocates the slice and nothing else.
type Obj struct {
	members  []Member
	index    map[string]int // nil until len(members) > indexFrom
	hasIndex bool           // some key is an array index, so Keys order differs from insertion order
}

// Member is one own property.
type Member struct {
	Key string
	Val Value
}

// indexFrom is the property count above which Obj keeps an index map.
const indexFrom = 16

// NewObj returns an empty object.
func NewObj() *Obj { return &Obj{} }

// ObjFrom returns an object holding a copy of members, which must have distinct
// keys, in that order. Small objects are allocated together with their members, in
// one allocation.
func ObjFrom(members []Member) *Obj {
	var o *Obj
	var dst []Member
	switch n := len(members); {
	case n <= 2:
		x := &struct {
			o Obj
			a [2]Member
		}{}
		o, dst = &x.o, x.a[:n]
	case n <= 4:
		x := &struct {
			o Obj
			a [4]Member
		}{}
		o, dst = &x.o, x.a[:n]
	case n <= 8:
		x := &struct {
			o Obj
			a [8]Member
		}{}
		o, dst = &x.o, x.a[:n]
	default:
		return newObjOf(slices.Clone(members))
	}
	copy(dst, members)
	o.members = dst
	for _, m := range dst {
		if _, ok := arrayIndex(m.Key); ok {
			o.hasIndex = true
			break
		}
	}
	return o
}

// newObjOf returns an object that takes ownership of members (distinct keys).
func newObjOf(members []Member) *Obj {
	o := &Obj{members: members}
	for _, m := range members {
		if _, ok := arrayIndex(m.Key); ok {
			o.hasIndex = true
			break
		}
	}
	if len(members) > indexFrom {
		o.buildIndex()
	}
	return o
}

func (o *Obj) buildIndex() {
	o.index = make(map[string]int, len(o.members))
	for i, m := range o.members {
		o.index[m.Key] = i
	}
}

func (o *Obj) find(key string) int {
	if o.index != nil {
		if i, ok := o.index[key]; ok {
			return i
		}
		return -1
	}
	for i := range o.members {
		if o.members[i].Key == key {
			return i
		}
	}
	return -1
}

// Define creates or replaces an own property the way JSON.parse and object spread do
// (CreateDataProperty): an existing key keeps its position, "__proto__" is an ordinary key.
func (o *Obj) Define(key string, v Value) {
	if i := o.find(key); i >= 0 {
		o.members[i].Val = v
		return
	}
	if !o.hasIndex {
		_, o.hasIndex = arrayIndex(key)
	}
	o.members = append(o.members, Member{Key: key, Val: v})
	switch {
	case o.index != nil:
		o.index[key] = len(o.members) - 1
	case len(o.members) > indexFrom:
		o.buildIndex()
	}
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
	if i := o.find(key); i >= 0 {
		return o.members[i].Val, true
	}
	return Value{}, false
}

// Len returns the number of own properties.
func (o *Obj) Len() int { return len(o.members) }

// Members returns the own properties in the order Object.keys returns them: array
// indices ascending, then the rest in insertion order. The result must not be
// modified; it is the object's own slice unless some key is an array index.
func (o *Obj) Members() []Member {
	if !o.hasIndex {
		return o.members
	}
	out := make([]Member, 0, len(o.members))
	for _, m := range o.members {
		if _, ok := arrayIndex(m.Key); ok {
			out = append(out, m)
		}
	}
	sort.SliceStable(out, func(i, j int) bool {
		a, _ := arrayIndex(out[i].Key)
		b, _ := arrayIndex(out[j].Key)
		return a < b
	})
	for _, m := range o.members {
		if _, ok := arrayIndex(m.Key); !ok {
			out = append(out, m)
		}
	}
	return out
}

// Keys returns the own property keys in Members order.
func (o *Obj) Keys() []string {
	ms := o.Members()
	out := make([]string, len(ms))
	for i, m := range ms {
		out[i] = m.Key
	}
	return out
}

// Values returns the own property values in Members order.
func (o *Obj) Values() []Value {
	ms := o.Members()
	out := make([]Value, len(ms))
	for i, m := range ms {
		out[i] = m.Val
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
