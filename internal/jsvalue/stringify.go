package jsvalue

import (
	"bytes"
	"cmp"
	"math"
	"slices"
	"strconv"
	"unicode"
)

// Stringify returns JSON.stringify(v). ok is false when JSON.stringify would return
// undefined (v itself is undefined). Inside arrays undefined becomes null; inside
// objects the property is omitted. NaN and ±Infinity become null.
func Stringify(v Value) (out []byte, ok bool) {
	if v.Kind == Undefined || v.Kind == Function {
		return nil, false
	}
	return appendValue(nil, v), true
}

func appendValue(b []byte, v Value) []byte {
	switch v.Kind {
	case Null, Undefined, Function:
		return append(b, "null"...)
	case Bool:
		if v.B {
			return append(b, "true"...)
		}
		return append(b, "false"...)
	case Number:
		if math.IsNaN(v.N) || math.IsInf(v.N, 0) {
			return append(b, "null"...)
		}
		return AppendNumber(b, v.N)
	case String:
		return AppendQuoted(b, v.S)
	case Array:
		b = append(b, '[')
		for i, e := range v.Arr {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendValue(b, e)
		}
		return append(b, ']')
	default:
		b = append(b, '{')
		first := true
		for _, m := range v.Obj.Members() {
			if m.Val.Kind == Undefined || m.Val.Kind == Function {
				continue
			}
			if !first {
				b = append(b, ',')
			}
			first = false
			b = AppendQuoted(b, m.Key)
			b = append(b, ':')
			b = appendValue(b, m.Val)
		}
		return append(b, '}')
	}
}

const hexDigits = "0123456789abcdef"

// AppendQuoted appends the JSON.stringify quoting of a WTF-8 string: only '"', '\\'
// and control characters are escaped (short forms where JSON has them), lone
// surrogates become \udxxx, and nothing is HTML-escaped.
func AppendQuoted(b []byte, s string) []byte {
	b = append(b, '"')
	for i := 0; i < len(s); {
		c := s[i]
		if c < 0x80 {
			i++
			switch c {
			case '"':
				b = append(b, '\\', '"')
			case '\\':
				b = append(b, '\\', '\\')
			case '\b':
				b = append(b, '\\', 'b')
			case '\f':
				b = append(b, '\\', 'f')
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default:
				if c < 0x20 {
					b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xF])
				} else {
					b = append(b, c)
				}
			}
			continue
		}
		r, n := decodeWTF8(s[i:])
		if r >= 0xD800 && r <= 0xDFFF {
			b = append(b, '\\', 'u', hexDigits[r>>12], hexDigits[r>>8&0xF], hexDigits[r>>4&0xF], hexDigits[r&0xF])
		} else {
			b = append(b, s[i:i+n]...)
		}
		i += n
	}
	return append(b, '"')
}

// FormatNumber implements ECMAScript Number::toString(10): the shortest digits that
// round-trip, in plain notation when the decimal exponent is in [-7, 21), otherwise
// as d.ddde±x. -0 formats as "0".
func FormatNumber(f float64) string {
	switch {
	case math.IsNaN(f):
		return "NaN"
	case math.IsInf(f, 1):
		return "Infinity"
	case math.IsInf(f, -1):
		return "-Infinity"
	}
	var buf [32]byte
	return string(AppendNumber(buf[:0], f))
}

// AppendNumber appends FormatNumber(f) for a finite f.
func AppendNumber(b []byte, f float64) []byte {
	if f == 0 {
		return append(b, '0')
	}
	// Integers below 2^53 print as their digits in both languages.
	if f == math.Trunc(f) && math.Abs(f) < 1<<53 {
		return strconv.AppendInt(b, int64(f), 10)
	}
	if f < 0 {
		b = append(b, '-')
		f = -f
	}
	var buf [32]byte
	e := strconv.AppendFloat(buf[:0], f, 'e', -1, 64) // d.ddde±xx
	at := bytes.IndexByte(e, 'e')
	mant, expPart := e[:at], e[at+1:]
	exp, _ := strconv.Atoi(string(expPart))
	var dbuf [24]byte
	digits := append(dbuf[:0], mant[0])
	if len(mant) > 2 {
		digits = append(digits, mant[2:]...)
	}
	k := len(digits)
	n := exp + 1
	switch {
	case k <= n && n <= 21:
		b = append(b, digits...)
		for range n - k {
			b = append(b, '0')
		}
	case 0 < n && n <= 21:
		b = append(b, digits[:n]...)
		b = append(b, '.')
		b = append(b, digits[n:]...)
	case -6 < n && n <= 0:
		b = append(b, '0', '.')
		for range -n {
			b = append(b, '0')
		}
		b = append(b, digits...)
	default:
		b = append(b, digits[0])
		if k > 1 {
			b = append(b, '.')
			b = append(b, digits[1:]...)
		}
		b = append(b, 'e')
		if n-1 >= 0 {
			b = append(b, '+')
		}
		b = strconv.AppendInt(b, int64(n-1), 10)
	}
	return b
}

// AppendCanonical appends JSON.stringify(deepSort(v)), the TypeScript library's
// canonical form, without building the sorted copy: every object's keys are written
// as deepSort leaves them (array-index keys ascending, then the rest sorted by
// a.toLowerCase() < b.toLowerCase(), ties in Object.keys order, "__proto__" dropped).
// ok is false when v is undefined.
func AppendCanonical(b []byte, v Value) (out []byte, ok bool) {
	var c Canonicalizer
	return c.Append(b, v)
}

// Canonicalizer is AppendCanonical with reusable scratch space, for callers that
// pool it. The zero value is ready to use; it is not safe for concurrent use.
type Canonicalizer struct {
	order []int32 // stack of member positions being ordered, shared by nested objects
}

// Append is AppendCanonical.
func (c *Canonicalizer) Append(b []byte, v Value) (out []byte, ok bool) {
	if v.Kind == Undefined || v.Kind == Function {
		return b, false
	}
	c.order = c.order[:0]
	return c.value(b, v), true
}

func (c *Canonicalizer) value(b []byte, v Value) []byte {
	switch v.Kind {
	case Array:
		b = append(b, '[')
		for i, e := range v.Arr {
			if i > 0 {
				b = append(b, ',')
			}
			b = c.value(b, e)
		}
		return append(b, ']')
	case Object:
	default:
		return appendValue(b, v)
	}
	members := v.Obj.members
	base := len(c.order)
	nonASCII := false
	for i, m := range members {
		if m.Key == "__proto__" {
			continue
		}
		if !nonASCII {
			for j := 0; j < len(m.Key); j++ {
				if m.Key[j] >= 0x80 {
					nonASCII = true
					break
				}
			}
		}
		c.order = append(c.order, int32(i))
	}
	seg := c.order[base:]
	// Array-index keys first, ascending; the rest after them, in insertion order.
	nIdx := 0
	if v.Obj.hasIndex {
		slices.SortStableFunc(seg, func(x, y int32) int {
			ax, xi := arrayIndex(members[x].Key)
			ay, yi := arrayIndex(members[y].Key)
			switch {
			case xi && yi:
				return cmp.Compare(ax, ay)
			case xi:
				return -1
			case yi:
				return 1
			}
			return 0
		})
		for nIdx < len(seg) {
			if _, ok := arrayIndex(members[seg[nIdx]].Key); !ok {
				break
			}
			nIdx++
		}
	}
	rest := seg[nIdx:]
	if nonASCII {
		lower := make(map[int32][]uint16, len(rest))
		for _, i := range rest {
			lower[i] = ToUTF16(ToLowerJS(members[i].Key))
		}
		slices.SortStableFunc(rest, func(x, y int32) int { return CompareUTF16(lower[x], lower[y]) })
	} else {
		// Insertion sort: stable, allocation-free and fastest for the few keys of a
		// typical payload.
		for i := 1; i < len(rest); i++ {
			for j := i; j > 0 && compareLowerASCII(members[rest[j-1]].Key, members[rest[j]].Key) > 0; j-- {
				rest[j-1], rest[j] = rest[j], rest[j-1]
			}
		}
	}
	b = append(b, '{')
	first := true
	for _, i := range seg {
		m := &members[i]
		if m.Val.Kind == Undefined || m.Val.Kind == Function {
			continue
		}
		if !first {
			b = append(b, ',')
		}
		first = false
		b = AppendQuoted(b, m.Key)
		b = append(b, ':')
		b = c.value(b, m.Val)
	}
	c.order = c.order[:base]
	return append(b, '}')
}

// compareLowerASCII compares ASCII strings as JavaScript compares their
// toLowerCase() forms.
func compareLowerASCII(a, b string) int {
	for i := 0; i < len(a) && i < len(b); i++ {
		x, y := a[i], b[i]
		if 'A' <= x && x <= 'Z' {
			x += 'a' - 'A'
		}
		if 'A' <= y && y <= 'Z' {
			y += 'a' - 'A'
		}
		if x != y {
			return int(x) - int(y)
		}
	}
	return len(a) - len(b)
}

// CompareUTF16 orders code unit sequences the way JavaScript's < orders strings.
func CompareUTF16(a, b []uint16) int {
	for i := 0; i < len(a) && i < len(b); i++ {
		if a[i] != b[i] {
			if a[i] < b[i] {
				return -1
			}
			return 1
		}
	}
	switch {
	case len(a) < len(b):
		return -1
	case len(a) > len(b):
		return 1
	}
	return 0
}

// ToLowerJS approximates String.prototype.toLowerCase (locale-independent Unicode
// default case conversion): simple lowercase mappings from Go's Unicode tables, the
// unconditional special mapping of U+0130, and the Final_Sigma context rule.
// Lone surrogates are left unchanged.
func ToLowerJS(s string) string {
	var buf []byte
	for i := 0; i < len(s); {
		r, n := decodeWTF8(s[i:])
		switch {
		case r == 0x130:
			buf = append(buf, "i\u0307"...)
		case r == 0x3A3:
			if finalSigma(s, i, i+n) {
				buf = appendRune(buf, 0x3C2)
			} else {
				buf = appendRune(buf, 0x3C3)
			}
		case r >= 0xD800 && r <= 0xDFFF:
			buf = append(buf, s[i:i+n]...)
		default:
			if l, ok := newerLowercase[r]; ok {
				buf = appendRune(buf, l)
			} else {
				buf = appendRune(buf, unicode.ToLower(r))
			}
		}
		i += n
	}
	return string(buf)
}

// finalSigma applies the Unicode Final_Sigma condition: a cased letter precedes the
// sigma (skipping case-ignorable characters) and no cased letter follows it.
func finalSigma(s string, start, end int) bool {
	before := false
	for j := start; j > 0; {
		k := j - 1
		for k > 0 && s[k]&0xC0 == 0x80 {
			k--
		}
		r, _ := decodeWTF8(s[k:])
		j = k
		if caseIgnorable(r) {
			continue
		}
		before = cased(r)
		break
	}
	if !before {
		return false
	}
	for j := end; j < len(s); {
		r, n := decodeWTF8(s[j:])
		j += n
		if caseIgnorable(r) {
			continue
		}
		return !cased(r)
	}
	return true
}

func cased(r rune) bool {
	return unicode.IsUpper(r) || unicode.IsLower(r) || unicode.IsTitle(r) ||
		unicode.Is(unicode.Other_Lowercase, r) || unicode.Is(unicode.Other_Uppercase, r)
}

func caseIgnorable(r rune) bool {
	switch r {
	case '\'', '.', ':', '^', '`', 0xB7, 0x2018, 0x2019, 0x2024, 0xFE52, 0xFF07, 0xFF0E:
		return true
	}
	return unicode.In(r, unicode.Mn, unicode.Me, unicode.Cf, unicode.Lm, unicode.Sk)
}
