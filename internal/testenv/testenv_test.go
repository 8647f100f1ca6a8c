package testenv

import (
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"
)

var validName = regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`)

func TestUniqueName(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, prefix string
	}{
		{"plain", "orders"},
		{"unsafe runes", "a b/c.d:é"},
		{"long prefix", strings.Repeat("x", 200)},
		{"empty prefix", ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			seen := map[string]bool{}
			for range 100 {
				n := UniqueName(t, tc.prefix)
				if !validName.MatchString(n) {
					t.Fatalf("UniqueName(%q) = %q: not [A-Za-z0-9_-]{1,64}", tc.prefix, n)
				}
				if seen[n] {
					t.Fatalf("UniqueName(%q) repeated %q", tc.prefix, n)
				}
				seen[n] = true
			}
		})
	}
}

// TestMissingService runs this test binary again with a service variable unset,
// because Skip and Fatal end the calling test and cannot be observed in-process.
func TestMissingService(t *testing.T) {
	t.Parallel()
	if os.Getenv("TESTENV_CHILD") == "1" {
		RedisAddr(t)
		return
	}
	tests := []struct {
		name     string
		ci       string
		wantFail bool
		wantOut  string
	}{
		{"skips locally", "", false, "--- SKIP"},
		{"fails on CI", "true", true, "--- FAIL"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			cmd := exec.Command(os.Args[0], "-test.run=^TestMissingService$", "-test.v")
			cmd.Env = append(withoutEnv(os.Environ(), EnvRedis, "CI"), "TESTENV_CHILD=1", "CI="+tc.ci)
			out, err := cmd.CombinedOutput()
			if failed := err != nil; failed != tc.wantFail {
				t.Fatalf("child failed=%v, want %v; output:\n%s", failed, tc.wantFail, out)
			}
			if !strings.Contains(string(out), tc.wantOut) || !strings.Contains(string(out), EnvRedis) {
				t.Fatalf("child output lacks %q naming %s:\n%s", tc.wantOut, EnvRedis, out)
			}
		})
	}
}

func withoutEnv(env []string, keys ...string) []string {
	var out []string
next:
	for _, kv := range env {
		for _, k := range keys {
			if strings.HasPrefix(kv, k+"=") {
				continue next
			}
		}
		out = append(out, kv)
	}
	return out
}

func TestAWSConfigRegion(t *testing.T) {
	t.Setenv("AWS_REGION", "")
	if got := AWSConfig(t).Region; got != DefaultRegion {
		t.Fatalf("region = %q, want %q", got, DefaultRegion)
	}
	t.Setenv("AWS_REGION", "eu-west-1")
	if got := AWSConfig(t).Region; got != "eu-west-1" {
		t.Fatalf("region = %q, want eu-west-1", got)
	}
	creds, err := AWSConfig(t).Credentials.Retrieve(t.Context())
	if err != nil || creds.AccessKeyID != "test" || creds.SecretAccessKey != "test" {
		t.Fatalf("credentials = %+v, %v; want test/test", creds, err)
	}
}
