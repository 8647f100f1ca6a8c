package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
)

func TestDemo(t *testing.T) {
	var out bytes.Buffer
	if code := run(context.Background(), []string{"demo"}, &out, &out); code != 0 {
		t.Fatalf("cairn demo exited %d:\n%s", code, &out)
	}
	got := out.String()
	for _, want := range []string{
		"order ord-1001 fulfilled: charge ch_ord-1001_24999, confirmed by Dana, tracking 1Zord-1001",
		"charge attempt 2: charged $249.99",
		"waiting 2s for the packing window",
		"shipped 2 box(es) packed by Dana",
	} {
		if !strings.Contains(got, want) {
			t.Fatalf("demo output lacks %q:\n%s", want, got)
		}
	}
	if n := strings.Count(got, "card processor timed out, retrying"); n != 1 {
		t.Fatalf("charge failed %d times, want exactly once:\n%s", n, got)
	}
}

func TestUsage(t *testing.T) {
	var out bytes.Buffer
	if code := run(context.Background(), []string{"nope"}, &out, &out); code != 2 || !strings.Contains(out.String(), "unknown command") {
		t.Fatalf("unknown command: code %d, output %q", code, &out)
	}
	out.Reset()
	if code := run(context.Background(), []string{"version"}, &out, &out); code != 0 || !strings.HasPrefix(out.String(), "cairn ") {
		t.Fatalf("version: code %d, output %q", code, &out)
	}
}
