package worlds_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/cairn-go/cairn/worlds"
)

func TestSearchAttributeValidation(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		key, value string
		ok         bool
	}{
		{"order", "v", true},
		{"Order_id.v2:x-y", "ünïcode", true},
		{strings.Repeat("k", worlds.MaxAttributeKeyLength), strings.Repeat("v", worlds.MaxAttributeValueLength), true},
		{"", "v", false},
		{strings.Repeat("k", worlds.MaxAttributeKeyLength+1), "v", false},
		{"cairn.x", "v", false},
		{"1a", "v", false},
		{"a=b", "v", false},
		{"a#b", "v", false},
		{"a b", "v", false},
		{"k", strings.Repeat("v", worlds.MaxAttributeValueLength+1), false},
		{"k", "\xff", false},
		{"k", "a\tb", false},
	} {
		err := worlds.ValidateSearchAttributeKey(tc.key)
		if err == nil {
			err = worlds.ValidateSearchAttributeValue(tc.key, tc.value)
		}
		if (err == nil) != tc.ok {
			t.Errorf("%.20q=%.20q: %v, want ok %v", tc.key, tc.value, err, tc.ok)
		}
		if err != nil && !errors.Is(err, worlds.ErrInvalidArgument) {
			t.Errorf("%.20q=%.20q: %v does not match ErrInvalidArgument", tc.key, tc.value, err)
		}
	}
}

func TestAttributeFilterHelpers(t *testing.T) {
	t.Parallel()
	run := worlds.Run{Attributes: map[string]string{"a": "1", "b": ""}}
	for _, tc := range []struct {
		filter map[string]string
		want   bool
	}{
		{nil, true},
		{map[string]string{"a": "1"}, true},
		{map[string]string{"a": "1", "b": ""}, true},
		{map[string]string{"a": "2"}, false},
		{map[string]string{"c": ""}, false},
	} {
		if got := worlds.MatchAttributes(run, tc.filter); got != tc.want {
			t.Errorf("MatchAttributes(%v) = %v, want %v", tc.filter, got, tc.want)
		}
	}
	if k, v, err := worlds.ParseAttributePair("a=b=c"); err != nil || k != "a" || v != "b=c" {
		t.Errorf("ParseAttributePair(a=b=c) = %q, %q, %v", k, v, err)
	}
	for _, bad := range []string{"a", "=b", ""} {
		if _, _, err := worlds.ParseAttributePair(bad); !errors.Is(err, worlds.ErrInvalidArgument) {
			t.Errorf("ParseAttributePair(%q) = %v, want ErrInvalidArgument", bad, err)
		}
	}
	if n := worlds.UserAttributeCount(map[string]string{"a": "", "cairn.parent": "", "cancel_reason": ""}); n != 1 {
		t.Errorf("UserAttributeCount = %d, want 1", n)
	}
}
