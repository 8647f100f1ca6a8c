package worlds

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Limits on what callers may submit when they start a run or resume a hook. Every
// entry point (the Go API in package workflow, the RPC and webhook endpoints in
// package worldhttp, the web UI) checks them before anything is written, so a
// value that one World could store and another could not is rejected everywhere.
const (
	// MaxRunIDLength bounds run IDs, in bytes. A run ID is part of DynamoDB keys
	// (RUN#<id>, HOOKS#<id>, sort keys <createdAt>#<id>), the SQS FIFO message
	// group ID (at most 128 characters) and delivery IDs such as start-<id> and
	// expire-<id>, which are FIFO deduplication IDs (also at most 128): 100
	// leaves room for the longest prefix.
	MaxRunIDLength = 100
	// MaxAttributes bounds the attributes given to a run when it starts.
	MaxAttributes = 50
	// MaxAttributeKeyLength bounds an attribute's key, in bytes.
	MaxAttributeKeyLength = 128
	// MaxAttributeValueLength bounds an attribute's value, in bytes; it also
	// bounds cancellation reasons, which are stored as an attribute.
	MaxAttributeValueLength = 1024
	// MaxInputBytes bounds a run's input and a hook's payload, as the workflow
	// runtime's default payload limit does. A World may bound them further: the
	// AWS World's items hold 400 KB, so the runtime keeps payloads to half that.
	MaxInputBytes = 256 << 10
	// MaxJSONDepth bounds how deeply arrays and objects nest in an input or a
	// payload, so decoding one cannot exhaust a reader's stack.
	MaxJSONDepth = 64
)

// runIDChars are the bytes a run ID may hold: ASCII letters, digits and - _ . :,
// which every key, queue attribute and schedule name in every World accepts.
func runIDChar(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' ||
		c == '-' || c == '_' || c == '.' || c == ':'
}

// ValidateRunID checks a caller-chosen run ID: 1 to [MaxRunIDLength] bytes of
// ASCII letters, digits, '-', '_', '.' and ':'. The error names the offending
// byte and matches [ErrInvalidArgument].
func ValidateRunID(id string) error {
	if id == "" {
		return &ArgumentError{Field: "runId", Value: `""`, Reason: "must not be empty"}
	}
	if len(id) > MaxRunIDLength {
		return &ArgumentError{Field: "runId", Value: strconv.Quote(clipValue(id)), Reason: fmt.Sprintf("%d bytes, at most %d", len(id), MaxRunIDLength)}
	}
	for i := 0; i < len(id); i++ {
		if !runIDChar(id[i]) {
			return &ArgumentError{Field: "runId", Value: strconv.Quote(clipValue(id)),
				Reason: fmt.Sprintf("byte %d is %q: use ASCII letters, digits, '-', '_', '.' and ':'", i, id[i])}
		}
	}
	return nil
}

// ValidateAttributes checks a run's attributes: at most [MaxAttributes], keys of
// 1 to [MaxAttributeKeyLength] bytes without control characters, values of at
// most [MaxAttributeValueLength] bytes, all valid UTF-8.
func ValidateAttributes(attrs map[string]string) error {
	if len(attrs) > MaxAttributes {
		return &ArgumentError{Field: "attributes", Value: len(attrs), Reason: fmt.Sprintf("at most %d attributes", MaxAttributes)}
	}
	for k, v := range attrs {
		switch {
		case k == "":
			return &ArgumentError{Field: "attributes", Value: `""`, Reason: "a key must not be empty"}
		case len(k) > MaxAttributeKeyLength:
			return &ArgumentError{Field: "attributes", Value: clipValue(k), Reason: fmt.Sprintf("key of %d bytes, at most %d", len(k), MaxAttributeKeyLength)}
		case !utf8.ValidString(k) || strings.ContainsFunc(k, isControl):
			return &ArgumentError{Field: "attributes", Value: strconv.Quote(clipValue(k)), Reason: "a key must be UTF-8 without control characters"}
		case len(v) > MaxAttributeValueLength:
			return &ArgumentError{Field: "attributes." + k, Value: len(v), Reason: fmt.Sprintf("value of %d bytes, at most %d", len(v), MaxAttributeValueLength)}
		case !utf8.ValidString(v):
			return &ArgumentError{Field: "attributes." + k, Value: strconv.Quote(clipValue(v)), Reason: "value is not valid UTF-8"}
		}
	}
	return nil
}

// ValidateJSON checks a run input or hook payload named field: valid JSON of at
// most [MaxInputBytes], nesting at most [MaxJSONDepth] deep, whose numbers all
// fit a float64 (1e999999 does not), which is what every JSON reader in Go and
// JavaScript can decode. Empty input is allowed and means null.
func ValidateJSON(field string, raw json.RawMessage) error {
	if len(raw) > MaxInputBytes {
		return &ArgumentError{Field: field, Value: len(raw), Reason: fmt.Sprintf("%d bytes, at most %d", len(raw), MaxInputBytes)}
	}
	if len(raw) == 0 {
		return nil
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	depth := 0
	for {
		tok, err := dec.Token()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return &ArgumentError{Field: field, Value: len(raw), Reason: "not valid JSON: " + err.Error()}
		}
		switch t := tok.(type) {
		case json.Delim:
			if t == '{' || t == '[' {
				if depth++; depth > MaxJSONDepth {
					return &ArgumentError{Field: field, Value: len(raw), Reason: fmt.Sprintf("nested deeper than %d", MaxJSONDepth)}
				}
			} else {
				depth--
			}
		case json.Number:
			if _, err := strconv.ParseFloat(string(t), 64); err != nil {
				return &ArgumentError{Field: field, Value: clipValue(string(t)), Reason: "number out of range of a 64-bit float"}
			}
		}
	}
	// Token accepts a stream of values; an input is exactly one.
	if !json.Valid(raw) {
		return &ArgumentError{Field: field, Value: len(raw), Reason: "not one valid JSON value"}
	}
	return nil
}

// ValidateReason checks a cancellation reason, which is stored as an attribute.
func ValidateReason(reason string) error {
	if len(reason) > MaxAttributeValueLength {
		return &ArgumentError{Field: "reason", Value: len(reason), Reason: fmt.Sprintf("%d bytes, at most %d", len(reason), MaxAttributeValueLength)}
	}
	if !utf8.ValidString(reason) {
		return &ArgumentError{Field: "reason", Value: strconv.Quote(clipValue(reason)), Reason: "not valid UTF-8"}
	}
	return nil
}

func isControl(r rune) bool { return r < 0x20 || r == 0x7f }

// clipValue shortens a rejected value for an error message.
func clipValue(s string) string {
	const n = 40
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}
