package conn_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/cairn-go/cairn/messaging/conn"
	merrors "github.com/cairn-go/cairn/messaging/errors"
)

func TestNew(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	if _, err := conn.New(ctx); !errors.Is(err, merrors.ErrEmptyRegion) {
		t.Fatalf("no region: %v", err)
	}
	if _, err := conn.New(ctx, conn.WithRegion("eu-west-1"), conn.WithAccessKey("k", "")); !errors.Is(err, merrors.ErrInvalidOption) {
		t.Fatalf("half credentials: %v", err)
	}
	cfg, err := conn.New(ctx, conn.WithRegion("eu-west-1"), conn.WithAccessKey("k", "s"),
		conn.WithSessionToken("tok"), conn.WithEndpoint("http://127.0.0.1:1"), conn.WithRetryCount(3))
	if err != nil {
		t.Fatal(err)
	}
	creds, err := cfg.Credentials.Retrieve(ctx)
	if err != nil || creds.AccessKeyID != "k" || creds.SessionToken != "tok" {
		t.Fatalf("creds %+v %v", creds, err)
	}
	if cfg.Region != "eu-west-1" || *cfg.BaseEndpoint != "http://127.0.0.1:1" || cfg.Retryer().MaxAttempts() != 3 {
		t.Fatalf("cfg region=%s endpoint=%v attempts=%d", cfg.Region, cfg.BaseEndpoint, cfg.Retryer().MaxAttempts())
	}
}

// WithProfile reads the named profile's credentials from the shared files;
// static keys take precedence over it.
func TestWithProfile(t *testing.T) {
	dir := t.TempDir()
	creds := filepath.Join(dir, "credentials")
	if err := os.WriteFile(creds, []byte("[default]\naws_access_key_id = default-key\naws_secret_access_key = d\n\n"+
		"[ci]\naws_access_key_id = ci-key\naws_secret_access_key = c\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", creds)
	t.Setenv("AWS_CONFIG_FILE", filepath.Join(dir, "config"))
	for _, k := range []string{"AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_PROFILE"} {
		t.Setenv(k, "")
		os.Unsetenv(k)
	}
	ctx := context.Background()
	for _, tc := range []struct {
		opts []conn.Option
		want string
	}{
		{[]conn.Option{conn.WithProfile("ci")}, "ci-key"},
		{nil, "default-key"},
		{[]conn.Option{conn.WithProfile("ci"), conn.WithAccessKey("static", "s")}, "static"},
	} {
		cfg, err := conn.New(ctx, append(tc.opts, conn.WithRegion("eu-west-1"))...)
		if err != nil {
			t.Fatal(err)
		}
		got, err := cfg.Credentials.Retrieve(ctx)
		if err != nil || got.AccessKeyID != tc.want {
			t.Fatalf("key %q (%v), want %q", got.AccessKeyID, err, tc.want)
		}
	}
	if _, err := conn.New(ctx, conn.WithRegion("eu-west-1"), conn.WithProfile("missing")); err == nil {
		t.Fatal("unknown profile accepted")
	}
}
