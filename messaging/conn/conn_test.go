package conn_test

import (
	"context"
	"errors"
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
