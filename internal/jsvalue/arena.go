package jsvalue

import "slices"

// Arena holds the objects and arrays of values whose lifetime the caller bounds, so
// that a caller deriving a digest from a parsed document (and keeping nothing of it)
// allocates no object or array per call. The zero value is ready to use; a nil *Arena
// allocates on the heap. An Arena is not safe for concurrent use.
//
// Values built in an Arena are valid until Reset: the caller must not keep any part
// of them (a Value, an *Obj, an Arr) beyond it. Strings are never stored in it.
// Objects and arrays that do not fit in the remaining capacity come from the heap.
// Every slice handed out is capped at its length, so Obj.Define and append on them
// reallocate instead of overwriting a neighbour.
type Arena struct {
	objs []Obj
	mems []Member
	vals []Value
	p    parser // for ParseOwnedIn, which is not reentrant on one Arena
}

// Arena capacities, allocated on first use. They fit request payloads of a few
// dozen fields; larger documents spill to the heap.
const (
	arenaObjs = 16
	arenaMems = 64
	arenaVals = 64
)

// Reset drops every value built since the last Reset, so that the memory can be reused.
func (a *Arena) Reset() {
	clear(a.objs)
	clear(a.mems)
	clear(a.vals)
	a.objs, a.mems, a.vals = a.objs[:0], a.mems[:0], a.vals[:0]
}

// ObjFrom is the package-level ObjFrom, allocating from a when it has room.
func (a *Arena) ObjFrom(members []Member) *Obj {
	n := len(members)
	if n == 0 && a == nil {
		return NewObj()
	}
	if a == nil || n > indexFrom {
		return ObjFrom(members)
	}
	if a.objs == nil {
		a.objs = make([]Obj, 0, arenaObjs)
		a.mems = make([]Member, 0, arenaMems)
	}
	if len(a.objs) == cap(a.objs) || cap(a.mems)-len(a.mems) < n {
		return ObjFrom(members)
	}
	a.objs = a.objs[:len(a.objs)+1]
	o := &a.objs[len(a.objs)-1]
	start := len(a.mems)
	a.mems = append(a.mems, members...)
	o.members = a.mems[start:len(a.mems):len(a.mems)]
	for _, m := range members {
		if _, ok := arrayIndex(m.Key); ok {
			o.hasIndex = true
			break
		}
	}
	return o
}

// Values returns a zeroed slice of n values (nil for 0), allocating from a when it
// has room.
func (a *Arena) Values(n int) []Value {
	if n == 0 {
		return nil
	}
	if a == nil {
		return make([]Value, n)
	}
	if a.vals == nil {
		a.vals = make([]Value, 0, arenaVals)
	}
	if cap(a.vals)-len(a.vals) < n {
		return make([]Value, n)
	}
	start := len(a.vals)
	a.vals = a.vals[:start+n]
	return a.vals[start : start+n : start+n]
}

// cloneValues copies items into a (or the heap).
func (a *Arena) cloneValues(items []Value) []Value {
	if a == nil {
		return slices.Clone(items)
	}
	out := a.Values(len(items))
	copy(out, items)
	return out
}
