package jsvalue

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"unicode/utf16"
	"unicode/utf8"
	"unsafe"
)

// ErrSyntax reports input that JSON.parse would reject.
var ErrSyntax = errors.New("jsvalue: invalid JSON")

// maxDepth bounds nesting so hostile input cannot exhaust the stack.
const maxDepth = 10000

// Parse decodes JSON text the way Node.js does for a UTF-8 request body: the bytes are
// decoded with the WHATWG UTF-8 decoder (each maximal invalid subsequence becomes
// U+FFFD), then JSON.parse runs: numbers become doubles (out of range is ±Infinity),
// duplicate keys keep the first position and the last value.
func Parse(data []byte) (Value, error) {
	return parse(data, string(data), false, nil)
}

// ParseOwned is Parse for a buffer the caller hands over: strings in the result share
// its memory instead of being copied, so data must never be modified afterwards.
func ParseOwned(data []byte) (Value, error) {
	return parse(data, unsafe.String(unsafe.SliceData(data), len(data)), false, nil)
}

// ParseOwnedIn is ParseOwned with the result's objects and arrays in a (see Arena):
// the result is valid until a is reset, and data must not change before then.
func ParseOwnedIn(a *Arena, data []byte) (Value, error) {
	return parse(data, unsafe.String(unsafe.SliceData(data), len(data)), false, a)
}

// ParseWTF8 is Parse for text that came from a JavaScript string (WTF-8, which may
// hold lone surrogates), as JSON.parse(string) sees it.
func ParseWTF8(data []byte) (Value, error) {
	return parse(data, string(data), true, nil)
}

// parsers recycles parsers for their scratch stacks.
var parsers = sync.Pool{New: func() any { return new(parser) }}

// maxPooledScratch keeps one huge document from pinning its stacks in the pool.
const maxPooledScratch = 4096

func parse(data []byte, src string, wtf8 bool, a *Arena) (Value, error) {
	// An arena carries its own parser; other parses take one from the pool.
	var p *parser
	if a != nil {
		p = &a.p
	} else {
		p = parsers.Get().(*parser)
	}
	p.data, p.src, p.pos, p.wtf8, p.arena = data, src, 0, wtf8, a
	defer func() {
		// Drop references into the document before reuse.
		clear(p.members[:p.usedMembers])
		clear(p.items[:p.usedItems])
		p.data, p.src, p.usedMembers, p.usedItems, p.arena = nil, "", 0, 0, nil
		small := cap(p.members) <= maxPooledScratch && cap(p.items) <= maxPooledScratch
		switch {
		case a == nil && small:
			parsers.Put(p)
		case a != nil && !small:
			p.members, p.items = nil, nil
		}
	}()
	p.ws()
	v, err := p.value(0)
	if err != nil {
		return Value{}, err
	}
	p.ws()
	if p.pos != len(p.data) {
		return Value{}, p.fail("unexpected data after JSON value")
	}
	return v, nil
}

type parser struct {
	data []byte
	src  string // data as a string: strings without escapes are substrings of it
	pos  int
	wtf8 bool
	// arena, when set, holds the finished objects and arrays.
	arena *Arena
	// members and items are stacks of the objects and arrays being parsed, so each
	// finished one is copied once into a slice of exactly its size.
	members []Member
	items   []Value
	// usedMembers and usedItems are the stacks' high-water marks, to clear on reuse.
	usedMembers, usedItems int
}

func (p *parser) fail(msg string) error {
	return fmt.Errorf("%w: %s at offset %d", ErrSyntax, msg, p.pos)
}

func (p *parser) ws() {
	for p.pos < len(p.data) {
		switch p.data[p.pos] {
		case ' ', '\t', '\n', '\r':
			p.pos++
		default:
			return
		}
	}
}

func (p *parser) literal(word string, v Value) (Value, error) {
	if len(p.data)-p.pos < len(word) || string(p.data[p.pos:p.pos+len(word)]) != word {
		return Value{}, p.fail("invalid literal")
	}
	p.pos += len(word)
	return v, nil
}

func (p *parser) value(depth int) (Value, error) {
	if depth > maxDepth {
		return Value{}, p.fail("nesting too deep")
	}
	if p.pos >= len(p.data) {
		return Value{}, p.fail("unexpected end of input")
	}
	switch c := p.data[p.pos]; {
	case c == '{':
		return p.object(depth)
	case c == '[':
		return p.array(depth)
	case c == '"':
		s, err := p.str()
		if err != nil {
			return Value{}, err
		}
		return Str(s), nil
	case c == 't':
		return p.literal("true", True)
	case c == 'f':
		return p.literal("false", False)
	case c == 'n':
		return p.literal("null", NullValue)
	case c == '-' || (c >= '0' && c <= '9'):
		return p.number()
	default:
		return Value{}, p.fail("unexpected character")
	}
}

func (p *parser) object(depth int) (Value, error) {
	p.pos++ // {
	p.ws()
	if p.pos < len(p.data) && p.data[p.pos] == '}' {
		p.pos++
		return ObjectOf(p.arena.ObjFrom(nil)), nil
	}
	// Members collect on p.members until the object ends or grows past indexFrom,
	// where it switches to an Obj with an index so duplicate detection stays linear.
	base := len(p.members)
	defer func() { p.members = p.members[:base] }()
	var o *Obj
	for {
		p.ws()
		if p.pos >= len(p.data) || p.data[p.pos] != '"' {
			return Value{}, p.fail("expected object key")
		}
		k, err := p.str()
		if err != nil {
			return Value{}, err
		}
		p.ws()
		if p.pos >= len(p.data) || p.data[p.pos] != ':' {
			return Value{}, p.fail("expected ':'")
		}
		p.pos++
		p.ws()
		v, err := p.value(depth + 1)
		if err != nil {
			return Value{}, err
		}
		switch {
		case o != nil:
			o.Define(k, v)
		default:
			dup := false
			for i := base; i < len(p.members); i++ {
				if p.members[i].Key == k {
					p.members[i].Val, dup = v, true // first position, last value
					break
				}
			}
			if !dup {
				p.members = append(p.members, Member{Key: k, Val: v})
				p.usedMembers = max(p.usedMembers, len(p.members))
			}
			if len(p.members)-base > indexFrom {
				o = newObjOf(slices.Clone(p.members[base:]))
			}
		}
		p.ws()
		if p.pos >= len(p.data) {
			return Value{}, p.fail("unterminated object")
		}
		switch p.data[p.pos] {
		case ',':
			p.pos++
		case '}':
			p.pos++
			if o == nil {
				o = p.arena.ObjFrom(p.members[base:])
			}
			return ObjectOf(o), nil
		default:
			return Value{}, p.fail("expected ',' or '}'")
		}
	}
}

func (p *parser) array(depth int) (Value, error) {
	p.pos++ // [
	p.ws()
	if p.pos < len(p.data) && p.data[p.pos] == ']' {
		p.pos++
		return ArrayOf(nil), nil
	}
	base := len(p.items)
	defer func() { p.items = p.items[:base] }()
	for {
		p.ws()
		v, err := p.value(depth + 1)
		if err != nil {
			return Value{}, err
		}
		p.items = append(p.items, v)
		p.usedItems = max(p.usedItems, len(p.items))
		p.ws()
		if p.pos >= len(p.data) {
			return Value{}, p.fail("unterminated array")
		}
		switch p.data[p.pos] {
		case ',':
			p.pos++
		case ']':
			p.pos++
			return ArrayOf(p.arena.cloneValues(p.items[base:])), nil
		default:
			return Value{}, p.fail("expected ',' or ']'")
		}
	}
}

func (p *parser) number() (Value, error) {
	start := p.pos
	d := p.data
	if p.pos < len(d) && d[p.pos] == '-' {
		p.pos++
	}
	digits := func() int {
		n := 0
		for p.pos < len(d) && d[p.pos] >= '0' && d[p.pos] <= '9' {
			p.pos++
			n++
		}
		return n
	}
	if p.pos < len(d) && d[p.pos] == '0' {
		p.pos++
	} else if digits() == 0 {
		return Value{}, p.fail("invalid number")
	}
	if p.pos < len(d) && d[p.pos] == '.' {
		p.pos++
		if digits() == 0 {
			return Value{}, p.fail("invalid number fraction")
		}
	}
	if p.pos < len(d) && (d[p.pos] == 'e' || d[p.pos] == 'E') {
		p.pos++
		if p.pos < len(d) && (d[p.pos] == '+' || d[p.pos] == '-') {
			p.pos++
		}
		if digits() == 0 {
			return Value{}, p.fail("invalid number exponent")
		}
	}
	// A plain integer of at most 15 digits is exactly representable, so its value is
	// the one ParseFloat would return.
	if lit := d[start:p.pos]; len(lit) <= 15 {
		neg := lit[0] == '-'
		if neg {
			lit = lit[1:]
		}
		var n int64
		plain := true
		for _, c := range lit {
			if c < '0' || c > '9' {
				plain = false
				break
			}
			n = n*10 + int64(c-'0')
		}
		if plain {
			f := float64(n)
			if neg {
				f = -f // -0 stays negative zero, as ParseFloat returns it
			}
			return Num(f), nil
		}
	}
	// ParseFloat rounds correctly like JSON.parse; overflow yields ±Inf with ErrRange,
	// which is what JavaScript holds too.
	f, err := strconv.ParseFloat(p.src[start:p.pos], 64)
	if err != nil && !errors.Is(err, strconv.ErrRange) {
		return Value{}, p.fail("invalid number")
	}
	return Num(f), nil
}

// str parses a JSON string starting at the opening quote and returns it as WTF-8.
func (p *parser) str() (string, error) {
	p.pos++ // "
	d := p.data
	// Fast path: no escapes and valid UTF-8 decode to themselves (the WHATWG decoder
	// changes only invalid sequences), so the string is a substring of the input.
	ascii := true
	for i := p.pos; i < len(d); i++ {
		c := d[i]
		if c == '"' {
			if seg := p.src[p.pos:i]; ascii || utf8.ValidString(seg) {
				p.pos = i + 1
				return seg, nil
			}
			break
		}
		if c == '\\' || c < 0x20 {
			break
		}
		if c >= 0x80 {
			ascii = false
		}
	}
	var units []uint16
	for {
		if p.pos >= len(d) {
			return "", p.fail("unterminated string")
		}
		c := d[p.pos]
		switch {
		case c == '"':
			p.pos++
			return FromUTF16(units), nil
		case c == '\\':
			p.pos++
			if p.pos >= len(d) {
				return "", p.fail("unterminated escape")
			}
			e := d[p.pos]
			p.pos++
			switch e {
			case '"', '\\', '/':
				units = append(units, uint16(e))
			case 'b':
				units = append(units, '\b')
			case 'f':
				units = append(units, '\f')
			case 'n':
				units = append(units, '\n')
			case 'r':
				units = append(units, '\r')
			case 't':
				units = append(units, '\t')
			case 'u':
				if len(d)-p.pos < 4 {
					return "", p.fail("short unicode escape")
				}
				n, err := strconv.ParseUint(string(d[p.pos:p.pos+4]), 16, 16)
				if err != nil {
					return "", p.fail("invalid unicode escape")
				}
				p.pos += 4
				units = append(units, uint16(n))
			default:
				return "", p.fail("invalid escape")
			}
		case c < 0x20:
			return "", p.fail("control character in string")
		case c < 0x80:
			units = append(units, uint16(c))
			p.pos++
		default:
			end := p.pos
			for end < len(d) && d[end] >= 0x80 {
				end++
			}
			units = appendDecoded(units, d[p.pos:end], p.wtf8)
			p.pos = end
		}
	}
}

// appendWHATWG decodes b (non-ASCII bytes) with the WHATWG UTF-8 decoder and appends
// the UTF-16 code units.
func appendWHATWG(units []uint16, b []byte) []uint16 { return appendDecoded(units, b, false) }

// appendDecoded is appendWHATWG that, with wtf8, also accepts encoded surrogates.
func appendDecoded(units []uint16, b []byte, wtf8 bool) []uint16 {
	const replacement = 0xFFFD
	var cp rune
	needed, seen := 0, 0
	lower, upper := byte(0x80), byte(0xBF)
	emit := func(r rune) {
		if r >= 0x10000 {
			r1, r2 := utf16.EncodeRune(r)
			units = append(units, uint16(r1), uint16(r2))
			return
		}
		units = append(units, uint16(r))
	}
	for i := 0; i < len(b); i++ {
		c := b[i]
		if needed == 0 {
			switch {
			case c <= 0x7F:
				emit(rune(c))
			case c >= 0xC2 && c <= 0xDF:
				needed, cp = 1, rune(c&0x1F)
			case c >= 0xE0 && c <= 0xEF:
				if c == 0xE0 {
					lower = 0xA0
				}
				if c == 0xED && !wtf8 {
					upper = 0x9F
				}
				needed, cp = 2, rune(c&0xF)
			case c >= 0xF0 && c <= 0xF4:
				if c == 0xF0 {
					lower = 0x90
				}
				if c == 0xF4 {
					upper = 0x8F
				}
				needed, cp = 3, rune(c&0x7)
			default:
				emit(replacement)
			}
			continue
		}
		if c < lower || c > upper {
			cp, needed, seen = 0, 0, 0
			lower, upper = 0x80, 0xBF
			emit(replacement)
			i-- // reprocess this byte as the start of a new sequence
			continue
		}
		lower, upper = 0x80, 0xBF
		cp = cp<<6 | rune(c&0x3F)
		seen++
		if seen == needed {
			emit(cp)
			cp, needed, seen = 0, 0, 0
		}
	}
	if needed != 0 {
		emit(replacement)
	}
	return units
}

// FromUTF16 encodes UTF-16 code units as WTF-8, pairing surrogates where they pair.
func FromUTF16(units []uint16) string {
	buf := make([]byte, 0, len(units))
	for i := 0; i < len(units); i++ {
		u := rune(units[i])
		if utf16.IsSurrogate(u) && u < 0xDC00 && i+1 < len(units) {
			if l := rune(units[i+1]); l >= 0xDC00 && l <= 0xDFFF {
				buf = appendRune(buf, utf16.DecodeRune(u, l))
				i++
				continue
			}
		}
		buf = appendRune(buf, u)
	}
	return string(buf)
}

// appendRune writes r in generalized UTF-8, which allows surrogate code points.
func appendRune(b []byte, r rune) []byte {
	switch {
	case r < 0x80:
		return append(b, byte(r))
	case r < 0x800:
		return append(b, 0xC0|byte(r>>6), 0x80|byte(r)&0x3F)
	case r < 0x10000:
		return append(b, 0xE0|byte(r>>12), 0x80|byte(r>>6)&0x3F, 0x80|byte(r)&0x3F)
	default:
		return append(b, 0xF0|byte(r>>18), 0x80|byte(r>>12)&0x3F, 0x80|byte(r>>6)&0x3F, 0x80|byte(r)&0x3F)
	}
}

// decodeWTF8 returns the code point (possibly a surrogate) at the start of s and its
// width. Invalid bytes decode as U+FFFD of width 1; Values built by this package never
// contain them.
func decodeWTF8(s string) (rune, int) {
	c := s[0]
	switch {
	case c < 0x80:
		return rune(c), 1
	case c&0xE0 == 0xC0 && len(s) >= 2:
		return rune(c&0x1F)<<6 | rune(s[1]&0x3F), 2
	case c&0xF0 == 0xE0 && len(s) >= 3:
		return rune(c&0x0F)<<12 | rune(s[1]&0x3F)<<6 | rune(s[2]&0x3F), 3
	case c&0xF8 == 0xF0 && len(s) >= 4:
		return rune(c&0x07)<<18 | rune(s[1]&0x3F)<<12 | rune(s[2]&0x3F)<<6 | rune(s[3]&0x3F), 4
	default:
		return 0xFFFD, 1
	}
}

// ToUTF16 returns the UTF-16 code units of a WTF-8 string.
func ToUTF16(s string) []uint16 {
	out := make([]uint16, 0, len(s))
	for i := 0; i < len(s); {
		r, n := decodeWTF8(s[i:])
		i += n
		if r >= 0x10000 {
			r1, r2 := utf16.EncodeRune(r)
			out = append(out, uint16(r1), uint16(r2))
		} else {
			out = append(out, uint16(r))
		}
	}
	return out
}

// FromGo converts a valid-UTF-8 Go string into a string Value's representation.
// Invalid bytes are decoded the WHATWG way, as Node.js would.
func FromGo(s string) string {
	return FromUTF16(appendWHATWG(nil, []byte(s)))
}
