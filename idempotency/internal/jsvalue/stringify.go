package jsvalue

import (
	"math"
	"sort"
	"strconv"
	"strings"
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
		return append(b, FormatNumber(v.N)...)
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
		for _, k := range v.Obj.Keys() {
			e, _ := v.Obj.Get(k)
			if e.Kind == Undefined || e.Kind == Function {
				continue
			}
			if !first {
				b = append(b, ',')
			}
			first = false
			b = AppendQuoted(b, k)
			b = append(b, ':')
			b = appendValue(b, e)
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

// FormatNumber implements ECMAScript Number::toString(10) for finite values: the
// shortest digits that round-trip, in plain notation when the decimal exponent is in
// [-7, 21), otherwise as d.ddde±x. -0 formats as "0".
func FormatNumber(f float64) string {
	if f == 0 {
		return "0"
	}
	if math.IsNaN(f) {
		return "NaN"
	}
	if math.IsInf(f, 1) {
		return "Infinity"
	}
	if math.IsInf(f, -1) {
		return "-Infinity"
	}
	neg := f < 0
	if neg {
		f = -f
	}
	e := strconv.FormatFloat(f, 'e', -1, 64) // d.ddde±xx
	mant, expStr, _ := strings.Cut(e, "e")
	digits := strings.Replace(mant, ".", "", 1)
	exp, _ := strconv.Atoi(expStr)
	k := len(digits)
	n := exp + 1
	var sb strings.Builder
	if neg {
		sb.WriteByte('-')
	}
	switch {
	case k <= n && n <= 21:
		sb.WriteString(digits)
		sb.WriteString(strings.Repeat("0", n-k))
	case 0 < n && n <= 21:
		sb.WriteString(digits[:n])
		sb.WriteByte('.')
		sb.WriteString(digits[n:])
	case -6 < n && n <= 0:
		sb.WriteString("0.")
		sb.WriteString(strings.Repeat("0", -n))
		sb.WriteString(digits)
	default:
		sb.WriteByte(digits[0])
		if k > 1 {
			sb.WriteByte('.')
			sb.WriteString(digits[1:])
		}
		sb.WriteByte('e')
		if n-1 >= 0 {
			sb.WriteByte('+')
		}
		sb.WriteString(strconv.Itoa(n - 1))
	}
	return sb.String()
}

// DeepSort reproduces the TypeScript deepSort: every object is rebuilt with its keys
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
