package checkpoint

import (
	"strconv"
	"unicode/utf16"
	"unicode/utf8"
)

// scanner checks that data is exactly one JSON value (RFC 8259) with the extra
// rules encoding/json does not enforce: valid UTF-8, no unpaired surrogate
// escapes, no duplicate member names (compared after unescaping) and bounded
// depth. encoding/json alone would replace bad UTF-8 with U+FFFD and keep the last
// of two duplicate members, silently changing the stored value.
type scanner struct {
	data     []byte
	pos      int
	maxDepth int
	err      *Error
}

func scan(data []byte, maxDepth int) *Error {
	s := &scanner{data: data, maxDepth: maxDepth}
	s.ws()
	if !s.value(0, "") {
		return s.err
	}
	s.ws()
	if s.pos != len(s.data) {
		return s.fail(ErrSyntax, "", "data after the top-level value")
	}
	return nil
}

func (s *scanner) fail(kind error, field, reason string) *Error {
	if s.err == nil {
		s.err = &Error{Op: OpDecode, Kind: kind, Field: field, Offset: s.pos, Err: simpleError(reason)}
	}
	return s.err
}

type simpleError string

func (e simpleError) Error() string { return string(e) }

func (s *scanner) ws() {
	for s.pos < len(s.data) {
		switch s.data[s.pos] {
		case ' ', '\t', '\n', '\r':
			s.pos++
		default:
			return
		}
	}
}

func (s *scanner) value(depth int, path string) bool {
	if s.pos >= len(s.data) {
		s.fail(ErrSyntax, path, "unexpected end of input")
		return false
	}
	switch c := s.data[s.pos]; {
	case c == '{':
		return s.object(depth+1, path)
	case c == '[':
		return s.array(depth+1, path)
	case c == '"':
		_, ok := s.str(path)
		return ok
	case c == '-' || (c >= '0' && c <= '9'):
		return s.number(path)
	default:
		for _, lit := range []string{"true", "false", "null"} {
			if len(s.data)-s.pos >= len(lit) && string(s.data[s.pos:s.pos+len(lit)]) == lit {
				s.pos += len(lit)
				return true
			}
		}
		s.fail(ErrSyntax, path, "invalid character "+strconv.QuoteRune(rune(c)))
		return false
	}
}

func (s *scanner) deep(depth int, path string) bool {
	if depth > s.maxDepth {
		e := s.fail(ErrTooDeep, path, "")
		e.Size, e.Limit, e.Err = depth, s.maxDepth, nil
		return true
	}
	return false
}

func (s *scanner) object(depth int, path string) bool {
	if s.deep(depth, path) {
		return false
	}
	s.pos++ // {
	s.ws()
	if s.pos < len(s.data) && s.data[s.pos] == '}' {
		s.pos++
		return true
	}
	seen := map[string]struct{}{}
	for {
		s.ws()
		if s.pos >= len(s.data) || s.data[s.pos] != '"' {
			s.fail(ErrSyntax, path, "expected a member name")
			return false
		}
		start := s.pos
		name, ok := s.str(path)
		if !ok {
			return false
		}
		member := path + "/" + name
		if _, dup := seen[name]; dup {
			s.pos = start
			s.fail(ErrDuplicateMember, member, "member "+strconv.Quote(name)+" appears twice")
			return false
		}
		seen[name] = struct{}{}
		s.ws()
		if s.pos >= len(s.data) || s.data[s.pos] != ':' {
			s.fail(ErrSyntax, member, "expected ':'")
			return false
		}
		s.pos++
		s.ws()
		if !s.value(depth, member) {
			return false
		}
		s.ws()
		if s.pos >= len(s.data) {
			s.fail(ErrSyntax, path, "unexpected end of input in object")
			return false
		}
		switch s.data[s.pos] {
		case ',':
			s.pos++
		case '}':
			s.pos++
			return true
		default:
			s.fail(ErrSyntax, path, "expected ',' or '}'")
			return false
		}
	}
}

func (s *scanner) array(depth int, path string) bool {
	if s.deep(depth, path) {
		return false
	}
	s.pos++ // [
	s.ws()
	if s.pos < len(s.data) && s.data[s.pos] == ']' {
		s.pos++
		return true
	}
	for i := 0; ; i++ {
		s.ws()
		if !s.value(depth, path+"/"+strconv.Itoa(i)) {
			return false
		}
		s.ws()
		if s.pos >= len(s.data) {
			s.fail(ErrSyntax, path, "unexpected end of input in array")
			return false
		}
		switch s.data[s.pos] {
		case ',':
			s.pos++
		case ']':
			s.pos++
			return true
		default:
			s.fail(ErrSyntax, path, "expected ',' or ']'")
			return false
		}
	}
}

// str scans a string starting at its opening quote and returns its unescaped value.
func (s *scanner) str(path string) (string, bool) {
	s.pos++ // "
	var out []byte
	for {
		if s.pos >= len(s.data) {
			s.fail(ErrSyntax, path, "unterminated string")
			return "", false
		}
		c := s.data[s.pos]
		switch {
		case c == '"':
			s.pos++
			return string(out), true
		case c < 0x20:
			s.fail(ErrSyntax, path, "control character in string")
			return "", false
		case c == '\\':
			r, ok := s.escape(path)
			if !ok {
				return "", false
			}
			out = utf8.AppendRune(out, r)
		case c < utf8.RuneSelf:
			out = append(out, c)
			s.pos++
		default:
			r, n := utf8.DecodeRune(s.data[s.pos:])
			if r == utf8.RuneError && n <= 1 {
				s.fail(ErrInvalidUTF8, path, "invalid UTF-8 byte in string")
				return "", false
			}
			out = append(out, s.data[s.pos:s.pos+n]...)
			s.pos += n
		}
	}
}

func (s *scanner) escape(path string) (rune, bool) {
	if s.pos+1 >= len(s.data) {
		s.fail(ErrSyntax, path, "unterminated escape")
		return 0, false
	}
	c := s.data[s.pos+1]
	s.pos += 2
	switch c {
	case '"', '\\', '/':
		return rune(c), true
	case 'b':
		return '\b', true
	case 'f':
		return '\f', true
	case 'n':
		return '\n', true
	case 'r':
		return '\r', true
	case 't':
		return '\t', true
	case 'u':
		r, ok := s.hex4(path)
		if !ok {
			return 0, false
		}
		if !utf16.IsSurrogate(r) {
			return r, true
		}
		if r < 0xDC00 && s.pos+1 < len(s.data) && s.data[s.pos] == '\\' && s.data[s.pos+1] == 'u' {
			s.pos += 2
			lo, ok := s.hex4(path)
			if !ok {
				return 0, false
			}
			if d := utf16.DecodeRune(r, lo); d != utf8.RuneError {
				return d, true
			}
		}
		s.pos -= 6
		s.fail(ErrInvalidUTF8, path, "unpaired surrogate escape")
		return 0, false
	}
	s.pos -= 2
	s.fail(ErrSyntax, path, "invalid escape")
	return 0, false
}

func (s *scanner) hex4(path string) (rune, bool) {
	if s.pos+4 > len(s.data) {
		s.fail(ErrSyntax, path, "short \\u escape")
		return 0, false
	}
	v, err := strconv.ParseUint(string(s.data[s.pos:s.pos+4]), 16, 32)
	if err != nil || s.data[s.pos] == '+' || s.data[s.pos] == '-' {
		s.fail(ErrSyntax, path, "invalid \\u escape")
		return 0, false
	}
	s.pos += 4
	return rune(v), true
}

func (s *scanner) number(path string) bool {
	start := s.pos
	if s.data[s.pos] == '-' {
		s.pos++
	}
	digits := func() int {
		n := 0
		for s.pos < len(s.data) && s.data[s.pos] >= '0' && s.data[s.pos] <= '9' {
			s.pos++
			n++
		}
		return n
	}
	if s.pos < len(s.data) && s.data[s.pos] == '0' {
		s.pos++
	} else if digits() == 0 {
		s.pos = start
		s.fail(ErrSyntax, path, "invalid number")
		return false
	}
	if s.pos < len(s.data) && s.data[s.pos] == '.' {
		s.pos++
		if digits() == 0 {
			s.fail(ErrSyntax, path, "invalid number fraction")
			return false
		}
	}
	if s.pos < len(s.data) && (s.data[s.pos] == 'e' || s.data[s.pos] == 'E') {
		s.pos++
		if s.pos < len(s.data) && (s.data[s.pos] == '+' || s.data[s.pos] == '-') {
			s.pos++
		}
		if digits() == 0 {
			s.fail(ErrSyntax, path, "invalid number exponent")
			return false
		}
	}
	return true
}
