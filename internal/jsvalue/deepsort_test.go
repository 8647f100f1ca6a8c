package jsvalue

import "sort"

// DeepSort reproduces the TypeScript deepSort literally, as the oracle AppendCanonical
// is checked against: every object is rebuilt with its keys
// sorted by a.toLowerCase() < b.toLowerCase() (V8's sort is stable, so keys whose
// lowercase forms are equal keep their Object.keys order) and assigned with
// acc[key] = value, which drops "__proto__". Arrays keep their order.
func DeepSort(v Value) Value {
	switch v.Kind {
	case Array:
		out := make([]Value, len(v.Arr))
		for i, e := range v.Arr {
			out[i] = DeepSort(e)
		}
		return ArrayOf(out)
	case Object:
		keys := v.Obj.Keys()
		lower := make(map[string][]uint16, len(keys))
		for _, k := range keys {
			lower[k] = ToUTF16(ToLowerJS(k))
		}
		sort.SliceStable(keys, func(i, j int) bool {
			return CompareUTF16(lower[keys[i]], lower[keys[j]]) < 0
		})
		o := NewObj()
		for _, k := range keys {
			e, _ := v.Obj.Get(k)
			o.Assign(k, DeepSort(e))
		}
		return ObjectOf(o)
	default:
		return v
	}
}
