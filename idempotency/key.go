package idempotency

import (
	"crypto/md5"
	"crypto/sha1"
	"crypto/sha256"
	"crypto/sha512"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"hash"
	"math"
	"slices"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/cairn-go/cairn/internal/jsvalue"
)

// HashAlgorithm names the digest used for idempotency keys and payload validation
// hashes, spelled as Node's crypto.createHash spells it.
type HashAlgorithm string

// The supported digests. MD5 is the reference default; a digest identifies a payload
// and is not an authentication signature.
const (
	MD5    HashAlgorithm = "md5"
	SHA1   HashAlgorithm = "sha1"
	SHA256 HashAlgorithm = "sha256"
	SHA384 HashAlgorithm = "sha384"
	SHA512 HashAlgorithm = "sha512"
)

func (a HashAlgorithm) newHash() (hash.Hash, error) {
	switch a {
	case MD5, "":
		return md5.New(), nil
	case SHA1:
		return sha1.New(), nil
	case SHA256:
		return sha256.New(), nil
	case SHA384:
		return sha512.New384(), nil
	case SHA512:
		return sha512.New(), nil
	default:
		return nil, &OptionError{Field: "HashAlgorithm", Value: string(a), Reason: "unknown hash algorithm (want md5, sha1, sha256, sha384 or sha512)"}
	}
}

// maxDigest is the longest base64 digest (SHA-512: 64 bytes).
const maxDigest = 88

// appendDigest appends base64(hash(data)), the reference's generateHash, without
// allocating.
func (a HashAlgorithm) appendDigest(dst, data []byte) ([]byte, error) {
	var sum [64]byte
	var n int
	switch a {
	case MD5, "":
		s := md5.Sum(data)
		n = copy(sum[:], s[:])
	case SHA1:
		s := sha1.Sum(data)
		n = copy(sum[:], s[:])
	case SHA256:
		s := sha256.Sum256(data)
		n = copy(sum[:], s[:])
	case SHA384:
		s := sha512.Sum384(data)
		n = copy(sum[:], s[:])
	case SHA512:
		s := sha512.Sum512(data)
		n = copy(sum[:], s[:])
	default:
		_, err := a.newHash()
		return dst, err
	}
	return base64.StdEncoding.AppendEncode(dst, sum[:n]), nil
}

// scratch is the reusable state of one key derivation: the payload's JSON, the
// parsed payload (whose strings share that JSON and whose objects and arrays live in
// the arena) and the canonical form being hashed. Nothing derived from it outlives
// release: keys are new strings, and errors never hold parts of the parsed payload.
type scratch struct {
	buf     []byte // canonical form
	canon   jsvalue.Canonicalizer
	arena   jsvalue.Arena
	payload jsonBuf       // the payload's JSON encoding
	enc     *json.Encoder // writes to payload
}

// jsonBuf is an io.Writer appending to a reusable slice.
type jsonBuf struct{ b []byte }

func (w *jsonBuf) Write(p []byte) (int, error) {
	w.b = append(w.b, p...)
	return len(p), nil
}

// scratches recycles key derivation state, so a call derives its key and validation
// hash with one allocation: the string holding both.
var scratches = sync.Pool{New: func() any {
	sc := &scratch{buf: make([]byte, 0, 1024), payload: jsonBuf{b: make([]byte, 0, 1024)}}
	sc.enc = json.NewEncoder(&sc.payload)
	return sc
}}

// maxPooled keeps one huge payload from pinning its buffer in the pool.
const maxPooled = 64 << 10

func getScratch() *scratch { return scratches.Get().(*scratch) }

// release returns sc to the pool; values obtained from sc.toValue are invalid after.
func (sc *scratch) release() {
	sc.arena.Reset()
	if cap(sc.buf) <= maxPooled && cap(sc.payload.b) <= maxPooled {
		scratches.Put(sc)
	}
}

// toValue is the package-level toValue with sc's buffers: the result is valid until
// sc is released. A json.RawMessage payload is copied into sc, never aliased, so the
// caller may change it at any time.
func (sc *scratch) toValue(v any) (jsvalue.Value, error) {
	if x, ok := v.(json.RawMessage); ok {
		sc.payload.b = append(sc.payload.b[:0], x...)
	} else {
		if val, ok := fromDynamic(&sc.arena, v, 0); ok {
			return val, nil
		}
		sc.payload.b = sc.payload.b[:0]
		// Encoder.Encode writes exactly what json.Marshal returns, and a newline.
		if err := sc.enc.Encode(v); err != nil {
			return jsvalue.Value{}, &UnsupportedValueError{Reason: "not representable as JSON", Err: err}
		}
		sc.payload.b = sc.payload.b[:len(sc.payload.b)-1]
	}
	val, err := jsvalue.ParseOwnedIn(&sc.arena, sc.payload.b)
	if err != nil {
		return jsvalue.Value{}, &UnsupportedValueError{Reason: "invalid JSON", Err: err}
	}
	return val, nil
}

// appendDigest appends base64(hash(canonical(v))) to dst.
func (sc *scratch) appendDigest(dst []byte, v jsvalue.Value, alg HashAlgorithm) ([]byte, error) {
	canon, ok := sc.canon.Append(sc.buf[:0], v)
	sc.buf = canon[:0]
	if !ok {
		return dst, fmt.Errorf("%w: expression result is undefined", ErrUnsupportedValue)
	}
	return alg.appendDigest(dst, canon)
}

// joinKey returns prefix + sep + digest in one allocation (the digest alone when sep
// is 0).
func joinKey(prefix string, sep byte, digest []byte) string {
	var sb strings.Builder
	if sep == 0 {
		sb.Grow(len(digest))
	} else {
		sb.Grow(len(prefix) + 1 + len(digest))
		sb.WriteString(prefix)
		sb.WriteByte(sep)
	}
	sb.Write(digest)
	return sb.String()
}

// CanonicalJSON returns JSON.stringify(deepSort(v)) exactly as the TypeScript library
// computes it for the JSON form of v: v is encoded with encoding/json (json.RawMessage
// and []byte-backed json.Marshaler output are used as is), parsed the way JSON.parse
// parses it (numbers become doubles, so integers beyond 2^53 lose precision exactly as
// in JavaScript), object keys are sorted case-insensitively with array-index keys
// first, "__proto__" is dropped, and numbers and strings are written as JavaScript
// writes them (no HTML escaping; lone surrogates as \udxxx).
//
// Go maps have no insertion order: keys whose lowercase forms are equal ("B" and "b")
// keep the order encoding/json writes them in (byte order). Pass a json.RawMessage to
// control that order.
func CanonicalJSON(v any) ([]byte, error) {
	val, err := toValue(v)
	if err != nil {
		return nil, err
	}
	out, ok := jsvalue.AppendCanonical(nil, val)
	if !ok {
		return nil, &UnsupportedValueError{Reason: "value is undefined"}
	}
	return out, nil
}

// Key returns the idempotency key the TypeScript library derives for payload:
// <prefix>#<base64(hash(CanonicalJSON(payload)))>.
func Key(prefix string, payload any, alg HashAlgorithm) (string, error) {
	sc := getScratch()
	defer sc.release()
	val, err := sc.toValue(payload)
	if err != nil {
		return "", err
	}
	var buf [maxDigest]byte
	d, err := sc.appendDigest(buf[:0], val, alg)
	if err != nil {
		return "", err
	}
	return joinKey(prefix, '#', d), nil
}

// toValue converts a Go value to the JavaScript value JSON.parse would produce from
// its JSON encoding. The dynamic types encoding/json decodes into (map[string]any,
// []any, string, float64, bool, nil) and Go's integer types are converted directly;
// everything else is encoded with encoding/json and parsed.
func toValue(v any) (jsvalue.Value, error) {
	if x, ok := v.(json.RawMessage); ok {
		return parseJSON(jsvalue.Parse, x)
	}
	if val, ok := fromDynamic(nil, v, 0); ok {
		return val, nil
	}
	b, err := json.Marshal(v)
	if err != nil {
		return jsvalue.Value{}, &UnsupportedValueError{Reason: "not representable as JSON", Err: err}
	}
	return parseJSON(jsvalue.ParseOwned, b) // b is ours: its strings need no copy
}

func parseJSON(parse func([]byte) (jsvalue.Value, error), data []byte) (jsvalue.Value, error) {
	val, err := parse(data)
	if err != nil {
		return jsvalue.Value{}, &UnsupportedValueError{Reason: "invalid JSON", Err: err}
	}
	return val, nil
}

// maxDynamicDepth bounds fromDynamic's recursion; deeper (or cyclic) values take the
// encoding/json route, which reports cycles.
const maxDynamicDepth = 64

// fromDynamic converts v without encoding it when the result is certainly the one
// encoding and parsing would give: valid UTF-8 strings (encoding/json replaces
// invalid bytes), finite float64s (their shortest form parses back to themselves),
// integers (JSON.parse and Go's conversion both round to the nearest double), and
// maps sorted by key as encoding/json sorts them. ok is false for anything else.
// Objects and arrays come from a (the heap when a is nil).
func fromDynamic(a *jsvalue.Arena, v any, depth int) (jsvalue.Value, bool) {
	switch x := v.(type) {
	case nil:
		return jsvalue.NullValue, true
	case string:
		if !utf8.ValidString(x) {
			return jsvalue.Value{}, false
		}
		return jsvalue.Str(x), true
	case bool:
		return jsvalue.BoolOf(x), true
	case float64:
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return jsvalue.Value{}, false
		}
		return jsvalue.Num(x), true
	case int:
		return jsvalue.Num(float64(x)), true
	case int64:
		return jsvalue.Num(float64(x)), true
	case int32:
		return jsvalue.Num(float64(x)), true
	case uint:
		return jsvalue.Num(float64(x)), true
	case uint64:
		return jsvalue.Num(float64(x)), true
	case uint32:
		return jsvalue.Num(float64(x)), true
	case []any:
		if x == nil {
			return jsvalue.NullValue, true
		}
		if depth >= maxDynamicDepth {
			return jsvalue.Value{}, false
		}
		items := a.Values(len(x))
		for i, e := range x {
			var ok bool
			if items[i], ok = fromDynamic(a, e, depth+1); !ok {
				return jsvalue.Value{}, false
			}
		}
		return jsvalue.ArrayOf(items), true
	case map[string]any:
		if x == nil {
			return jsvalue.NullValue, true
		}
		if depth >= maxDynamicDepth {
			return jsvalue.Value{}, false
		}
		var small [8]jsvalue.Member
		members := small[:0]
		if len(x) > len(small) {
			members = make([]jsvalue.Member, 0, len(x))
		}
		for k, e := range x {
			if !utf8.ValidString(k) {
				return jsvalue.Value{}, false
			}
			val, ok := fromDynamic(a, e, depth+1)
			if !ok {
				return jsvalue.Value{}, false
			}
			members = append(members, jsvalue.Member{Key: k, Val: val})
		}
		slices.SortFunc(members, func(a, b jsvalue.Member) int { return strings.Compare(a.Key, b.Key) })
		return jsvalue.ObjectOf(a.ObjFrom(members)), true
	}
	return jsvalue.Value{}, false
}
