package main

import (
	"flag"
	"io"
	"slices"
	"testing"
	"time"
)

func TestParseInterleaved(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		args    []string
		wantPos []string
		wantDB  string
		wantErr bool
	}{
		{[]string{"runs"}, []string{"runs"}, "", false},
		{[]string{"--db", "x", "run", "id"}, []string{"run", "id"}, "x", false},
		{[]string{"run", "--db=y", "id"}, []string{"run", "id"}, "y", false},
		{[]string{"run", "id", "--db", "z"}, []string{"run", "id"}, "z", false},
		{[]string{"run", "--", "--db"}, []string{"run", "--db"}, "", false},
		{[]string{"run", "--nope"}, nil, "", true},
		{[]string{"run", "--db"}, nil, "", true},
	} {
		fs := flag.NewFlagSet("t", flag.ContinueOnError)
		fs.SetOutput(io.Discard)
		db := fs.String("db", "", "")
		pos, err := parseInterleaved(fs, tc.args)
		if (err != nil) != tc.wantErr || (!tc.wantErr && (!slices.Equal(pos, tc.wantPos) || *db != tc.wantDB)) {
			t.Errorf("parseInterleaved(%q) = %q, db %q, err %v; want %q, db %q, err %v", tc.args, pos, *db, err, tc.wantPos, tc.wantDB, tc.wantErr)
		}
	}
}

func TestParseTime(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		in      string
		want    time.Time
		wantErr bool
	}{
		{"", time.Time{}, false},
		{"90m", now.Add(-90 * time.Minute), false},
		{"2026-01-02", time.Date(2026, 1, 2, 0, 0, 0, 0, time.UTC), false},
		{"2026-01-02T03:04:05Z", time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC), false},
		{"2026-01-02T03:04:05+02:00", time.Date(2026, 1, 2, 1, 4, 5, 0, time.UTC), false},
		{"-5m", time.Time{}, true},
		{"yesterday", time.Time{}, true},
		{"2026-13-01", time.Time{}, true},
	} {
		got, err := parseTime("since", tc.in, now)
		if (err != nil) != tc.wantErr || !got.Equal(tc.want) {
			t.Errorf("parseTime(%q) = %v, %v; want %v, error %v", tc.in, got, err, tc.want, tc.wantErr)
		}
	}
}

func FuzzParseTime(f *testing.F) {
	for _, s := range []string{"", "1h", "2026-01-02", "2026-01-02T03:04:05Z", "-1s", "x"} {
		f.Add(s)
	}
	now := time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC)
	f.Fuzz(func(t *testing.T, s string) {
		got, err := parseTime("since", s, now)
		if err != nil && !got.IsZero() {
			t.Fatalf("error %v with a time %v", err, got)
		}
		if d, derr := time.ParseDuration(s); derr == nil && d >= 0 && (err != nil || !got.Equal(now.Add(-d))) {
			t.Fatalf("duration %q gave %v, %v", s, got, err)
		}
	})
}
