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

	"github.com/cairn-go/cairn/idempotency/internal/jsvalue"
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

// digest returns base64(hash(data)), the reference's generateHash.
func (a HashAlgorithm) digest(data []byte) (string, error) {
	h, err := a.newHash()
	if err != nil {
		return "", err
	}
	h.Write(data)
	return base64.StdEncoding.EncodeToString(h.Sum(nil)), nil
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
	out, ok := jsvalue.Stringify(jsvalue.DeepSort(val))
	if !ok {
		return nil, &UnsupportedValueError{Reason: "value is undefined"}
	}
	return out, nil
}

// Key returns the idempotency key the TypeScript library derives for payload:
// <prefix>#<base64(hash(CanonicalJSON(payload)))>.
func Key(prefix string, payload any, alg HashAlgorithm) (string, error) {
	canon, err := CanonicalJSON(payload)
	if err != nil {
		return "", err
	}
	d, err := alg.digest(canon)
	if err != nil {
		return "", err
	}
	return prefix + "#" + d, nil
}

// toValue converts a Go value to the JavaScript value JSON.parse would produce from
// its JSON encoding.
func toValue(v any) (jsvalue.Value, error) {
	var data []byte
	switch x := v.(type) {
	case json.RawMessage:
		data = x
	default:
		b, err := json.Marshal(v)
		if err != nil {
			return jsvalue.Value{}, &UnsupportedValueError{Reason: "not representable as JSON", Err: err}
		}
		data = b
	}
	val, err := jsvalue.Parse(data)
	if err != nil {
		return jsvalue.Value{}, &UnsupportedValueError{Reason: "invalid JSON", Err: err}
	}
	return val, nil
}

// hashValue hashes the canonical form of an already-parsed value.
func hashValue(v jsvalue.Value, alg HashAlgorithm) (string, error) {
	canon, ok := jsvalue.Stringify(jsvalue.DeepSort(v))
	if !ok {
		return "", fmt.Errorf("%w: expression result is undefined", ErrUnsupportedValue)
	}
	return alg.digest(canon)
}
