package checkpoint

import (
	"encoding"
	"encoding/json"
	"reflect"
	"strconv"
	"strings"
	"unicode/utf8"
)

var (
	jsonMarshaler   = reflect.TypeFor[json.Marshaler]()
	jsonUnmarshaler = reflect.TypeFor[json.Unmarshaler]()
	textMarshaler   = reflect.TypeFor[encoding.TextMarshaler]()
	textUnmarshaler = reflect.TypeFor[encoding.TextUnmarshaler]()
)

// invalidString finds a Go string that is not valid UTF-8 in the data encoding/json
// would encode itself (it skips values with their own marshalers) and returns its path.
func invalidString(v reflect.Value, path string, depth int) (string, bool) {
	if !v.IsValid() || depth > DefaultMaxDepth {
		return "", false
	}
	t := v.Type()
	if t.Implements(jsonMarshaler) || t.Implements(textMarshaler) {
		return "", false
	}
	switch v.Kind() {
	case reflect.String:
		return path, !utf8.ValidString(v.String())
	case reflect.Pointer, reflect.Interface:
		if v.IsNil() {
			return "", false
		}
		return invalidString(v.Elem(), path, depth+1)
	case reflect.Slice, reflect.Array:
		if t.Elem().Kind() == reflect.Uint8 {
			return "", false // base64
		}
		for i := 0; i < v.Len(); i++ {
			if p, bad := invalidString(v.Index(i), path+"/"+strconv.Itoa(i), depth+1); bad {
				return p, true
			}
		}
	case reflect.Map:
		it := v.MapRange()
		for it.Next() {
			k := it.Key()
			if k.Kind() == reflect.String && !utf8.ValidString(k.String()) {
				return path + "/" + k.String(), true
			}
			if p, bad := invalidString(it.Value(), path+"/"+k.String(), depth+1); bad {
				return p, true
			}
		}
	case reflect.Struct:
		for _, f := range fieldsOf(t) {
			fv, ok := fieldByIndex(v, f.index)
			if !ok {
				continue
			}
			if p, bad := invalidString(fv, path+"/"+f.name, depth+1); bad {
				return p, true
			}
		}
	}
	return "", false
}

func fieldByIndex(v reflect.Value, index []int) (reflect.Value, bool) {
	for i, x := range index {
		if i > 0 && v.Kind() == reflect.Pointer {
			if v.IsNil() {
				return reflect.Value{}, false
			}
			v = v.Elem()
		}
		v = v.Field(x)
	}
	return v, true
}

// checkMembers walks a decoded JSON tree alongside the Go type it will be bound
// to, and reports a member that names no field exactly. encoding/json would bind a
// member that differs only in case, and drop an unknown one without a trace.
func checkMembers(tree any, t reflect.Type, path string, allowUnknown bool) (string, string, bool) {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if reflect.PointerTo(t).Implements(jsonUnmarshaler) || reflect.PointerTo(t).Implements(textUnmarshaler) {
		return "", "", false
	}
	switch t.Kind() {
	case reflect.Struct:
		obj, ok := tree.(map[string]any)
		if !ok {
			return "", "", false // a kind mismatch: encoding/json reports it as ErrSchema
		}
		fields := fieldsOf(t)
		for name, val := range obj {
			f, exact := fields[name]
			if !exact {
				for fname := range fields {
					if strings.EqualFold(fname, name) {
						return path + "/" + name, "member differs in case from field " + strconv.Quote(fname), true
					}
				}
				if allowUnknown {
					continue
				}
				return path + "/" + name, "no field of " + t.String() + " is named " + strconv.Quote(name), true
			}
			if p, r, bad := checkMembers(val, f.typ, path+"/"+name, allowUnknown); bad {
				return p, r, true
			}
		}
	case reflect.Map:
		if obj, ok := tree.(map[string]any); ok {
			for k, val := range obj {
				if p, r, bad := checkMembers(val, t.Elem(), path+"/"+k, allowUnknown); bad {
					return p, r, true
				}
			}
		}
	case reflect.Slice, reflect.Array:
		if arr, ok := tree.([]any); ok {
			for i, val := range arr {
				if p, r, bad := checkMembers(val, t.Elem(), path+"/"+strconv.Itoa(i), allowUnknown); bad {
					return p, r, true
				}
			}
		}
	}
	return "", "", false
}

type field struct {
	name  string
	typ   reflect.Type
	index []int
}

// fieldsOf lists the JSON members of a struct type the way encoding/json names
// them: the tag name or the Go name, exported fields only, embedded structs
// flattened with shallower fields winning.
func fieldsOf(t reflect.Type) map[string]field {
	out := map[string]field{}
	depthOf := map[string]int{}
	var walk func(t reflect.Type, index []int, depth int)
	walk = func(t reflect.Type, index []int, depth int) {
		if depth > 10 {
			return
		}
		for i := 0; i < t.NumField(); i++ {
			sf := t.Field(i)
			tag := sf.Tag.Get("json")
			if tag == "-" {
				continue
			}
			name, _, _ := strings.Cut(tag, ",")
			idx := append(append([]int(nil), index...), i)
			ft := sf.Type
			if sf.Anonymous && name == "" {
				if ft.Kind() == reflect.Pointer {
					ft = ft.Elem()
				}
				if ft.Kind() == reflect.Struct {
					walk(ft, idx, depth+1)
					continue
				}
			}
			if !sf.IsExported() {
				continue
			}
			if name == "" {
				name = sf.Name
			}
			if d, seen := depthOf[name]; seen && d <= depth {
				continue
			}
			depthOf[name] = depth
			out[name] = field{name: name, typ: sf.Type, index: idx}
		}
	}
	walk(t, nil, 0)
	return out
}
