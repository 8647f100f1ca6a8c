package worlds

import (
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Search attributes are the run attributes workflow code sets with
// workflow.UpsertAttributes, and that [RunFilter.Attributes] selects runs by.
// [RunFilter.Attributes] matches every attribute of a run, whoever set it: the
// ones given at start, the runtime's own (keys starting with
// [ReservedAttributePrefix]) and those workflow code upserted.

// ReservedAttributePrefix starts the keys of the attributes the runtime keeps
// for itself (versions, cancellation, parent and continuation links). Workflow
// code cannot set them with workflow.UpsertAttributes; listings may filter on
// them.
const ReservedAttributePrefix = "cairn."

// attrKeyChar reports whether c may appear in a search attribute key: ASCII
// letters, digits and '_', '-', '.', ':'. No key holds '=', so "k=v" on a
// command line or in a query string is never ambiguous, nor '#', which the AWS
// World's index keys use as a separator.
func attrKeyChar(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' ||
		c == '_' || c == '-' || c == '.' || c == ':'
}

// ValidateSearchAttributeKey checks a key workflow code upserts: 1 to
// [MaxAttributeKeyLength] bytes of ASCII letters, digits, '_', '-', '.' and
// ':', starting with a letter, and not starting with [ReservedAttributePrefix].
// The error is an *[ArgumentError] naming the key.
func ValidateSearchAttributeKey(key string) error {
	switch {
	case key == "":
		return &ArgumentError{Field: "attributes", Value: `""`, Reason: "a key must not be empty"}
	case len(key) > MaxAttributeKeyLength:
		return &ArgumentError{Field: "attributes", Value: strconv.Quote(clipValue(key)), Reason: fmt.Sprintf("key of %d bytes, at most %d", len(key), MaxAttributeKeyLength)}
	case strings.HasPrefix(key, ReservedAttributePrefix):
		return &ArgumentError{Field: "attributes", Value: strconv.Quote(clipValue(key)), Reason: "keys starting with " + strconv.Quote(ReservedAttributePrefix) + " are reserved for the runtime"}
	case !('a' <= key[0] && key[0] <= 'z' || 'A' <= key[0] && key[0] <= 'Z'):
		return &ArgumentError{Field: "attributes", Value: strconv.Quote(clipValue(key)), Reason: "a key must start with an ASCII letter"}
	}
	for i := 0; i < len(key); i++ {
		if !attrKeyChar(key[i]) {
			return &ArgumentError{Field: "attributes", Value: strconv.Quote(clipValue(key)),
				Reason: fmt.Sprintf("byte %d is %q: use ASCII letters, digits, '_', '-', '.' and ':'", i, key[i])}
		}
	}
	return nil
}

// ValidateSearchAttributeValue checks the value workflow code upserts for key:
// at most [MaxAttributeValueLength] bytes of UTF-8 without control characters.
func ValidateSearchAttributeValue(key, value string) error {
	switch {
	case len(value) > MaxAttributeValueLength:
		return &ArgumentError{Field: "attributes." + key, Value: len(value), Reason: fmt.Sprintf("value of %d bytes, at most %d", len(value), MaxAttributeValueLength)}
	case !utf8.ValidString(value):
		return &ArgumentError{Field: "attributes." + key, Value: strconv.Quote(clipValue(value)), Reason: "value is not valid UTF-8"}
	case strings.ContainsFunc(value, isControl):
		return &ArgumentError{Field: "attributes." + key, Value: strconv.Quote(clipValue(value)), Reason: "value must not hold control characters"}
	}
	return nil
}

// UserAttributeCount counts the attributes of attrs that are not the runtime's
// own: keys without [ReservedAttributePrefix], and not the cancel reason every
// cancel writes. A run holds at most [MaxAttributes] of them.
func UserAttributeCount(attrs map[string]string) int {
	n := 0
	for k := range attrs {
		if !strings.HasPrefix(k, ReservedAttributePrefix) && k != attrCancelReason {
			n++
		}
	}
	return n
}

// ValidateAttributeFilter checks [RunFilter.Attributes]: at most
// [MaxAttributes] pairs, each key 1 to [MaxAttributeKeyLength] bytes of UTF-8
// without control characters (any key a run can hold, reserved ones included),
// each value at most [MaxAttributeValueLength] bytes of UTF-8. Every World
// calls it, so a filter one World refuses is refused by all.
func ValidateAttributeFilter(attrs map[string]string) error {
	if len(attrs) > MaxAttributes {
		return &ArgumentError{Field: "RunFilter.Attributes", Value: len(attrs), Reason: fmt.Sprintf("at most %d pairs", MaxAttributes)}
	}
	for k, v := range attrs {
		switch {
		case k == "":
			return &ArgumentError{Field: "RunFilter.Attributes", Value: `""`, Reason: "a key must not be empty"}
		case len(k) > MaxAttributeKeyLength:
			return &ArgumentError{Field: "RunFilter.Attributes", Value: strconv.Quote(clipValue(k)), Reason: fmt.Sprintf("key of %d bytes, at most %d", len(k), MaxAttributeKeyLength)}
		case !utf8.ValidString(k) || strings.ContainsFunc(k, isControl):
			return &ArgumentError{Field: "RunFilter.Attributes", Value: strconv.Quote(clipValue(k)), Reason: "a key must be UTF-8 without control characters"}
		case len(v) > MaxAttributeValueLength:
			return &ArgumentError{Field: "RunFilter.Attributes." + k, Value: len(v), Reason: fmt.Sprintf("value of %d bytes, at most %d", len(v), MaxAttributeValueLength)}
		case !utf8.ValidString(v):
			return &ArgumentError{Field: "RunFilter.Attributes." + k, Value: strconv.Quote(clipValue(v)), Reason: "value is not valid UTF-8"}
		}
	}
	return nil
}

// MatchAttributes reports whether the run holds every pair of filter with
// exactly that value; an empty filter matches every run.
func MatchAttributes(run Run, filter map[string]string) bool {
	for k, v := range filter {
		got, ok := run.Attributes[k]
		if !ok || got != v {
			return false
		}
	}
	return true
}

// ParseAttributePair splits "key=value" at its first '=', as command lines and
// query strings give attribute filters. The key must not be empty; the value
// may be.
func ParseAttributePair(s string) (key, value string, err error) {
	key, value, ok := strings.Cut(s, "=")
	if !ok || key == "" {
		return "", "", &ArgumentError{Field: "attribute", Value: strconv.Quote(clipValue(s)), Reason: "want key=value"}
	}
	return key, value, nil
}
