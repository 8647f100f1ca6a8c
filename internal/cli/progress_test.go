package cli

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"testing"
)

func TestProgressSilentWhenNotTerminal(t *testing.T) {
	t.Parallel()
	var buf bytes.Buffer
	p := NewProgress(&buf)
	p.Update("page %d", 1)
	p.Done()
	if buf.Len() != 0 {
		t.Fatalf("wrote %q to a buffer", buf.String())
	}
	f, err := os.Create(filepath.Join(t.TempDir(), "out"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if IsTerminal(f) {
		t.Fatal("a regular file is not a terminal")
	}
	null, err := os.OpenFile(os.DevNull, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer null.Close()
	if IsTerminal(null) || NewProgress(null).Enabled() {
		t.Fatal("/dev/null is a character device but not a terminal")
	}
}

func TestProgressRewritesLine(t *testing.T) {
	t.Parallel()
	var buf bytes.Buffer
	p := ForceProgress(&buf)
	p.Update("loading page %d", 10)
	p.Update("ok")
	p.Done()
	want := "\rloading page 10" + "\rok" + "             " + "\r  \r"
	if got := buf.String(); got != want {
		t.Fatalf("got %q, want %q", got, want)
	}
}

func TestOneLine(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		err  error
		want string
	}{
		{nil, ""},
		{errors.New("a\nb\tc  d"), "a b c d"},
		{errors.New("plain"), "plain"},
	} {
		if got := OneLine(tc.err); got != tc.want {
			t.Errorf("OneLine(%v) = %q, want %q", tc.err, got, tc.want)
		}
	}
}
