package middleware_test

import (
	"context"
	"errors"
	"log/slog"
	"testing"

	"github.com/cairn-go/cairn/messaging/fake"
	"github.com/cairn-go/cairn/messaging/messagingtest"
	"github.com/cairn-go/cairn/messaging/middleware"
	"github.com/cairn-go/cairn/messaging/router"
)

// Logging and Recovery write loafer-awsx's records: receipt and success at
// Info, the panic as "panic recovered", the MessageId (or a double's
// Identifier) as message_id, and no message_id for a nil message.
func TestLogRecordsMatchLoaferAWSX(t *testing.T) {
	t.Parallel()
	delivery := messagingtest.NewMessage(`{}`, nil)
	delivery.MessageID = "mid-1"
	tests := []struct {
		name    string
		msg     middleware.Message
		handler middleware.Handler
		want    []string // message, level, message_id ("-" when absent)
	}{
		{"delivery", delivery, func(context.Context, middleware.Message) error { return nil },
			[]string{"message received", "INFO", "mid-1", "message processed", "INFO", "mid-1"}},
		{"double", &fake.Message{IdentifierValue: "rh-1"}, func(context.Context, middleware.Message) error { return errors.New("x") },
			[]string{"message received", "INFO", "rh-1", "message processing failed", "ERROR", "rh-1"}},
		{"panic", &fake.Message{IdentifierValue: "rh-2"}, func(context.Context, middleware.Message) error { panic("bug") },
			[]string{"message received", "INFO", "rh-2", "message processing failed", "ERROR", "rh-2", "panic recovered", "ERROR", "rh-2"}},
		{"nil", nil, func(context.Context, middleware.Message) error { panic("bug") },
			[]string{"message received", "INFO", "-", "message processing failed", "ERROR", "-", "panic recovered", "ERROR", "-"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			logs := fake.NewLogHandler()
			log := slog.New(logs)
			_ = middleware.Recovery(log)(middleware.Logging(log)(tt.handler))(context.Background(), tt.msg)
			var got []string
			for _, r := range logs.Records() {
				id, ok := r.Attrs["message_id"].(string)
				if !ok {
					id = "-"
				}
				got = append(got, r.Message, r.Level.String(), id)
			}
			if len(got) != len(tt.want) {
				t.Fatalf("records %q, want %q", got, tt.want)
			}
			for i := range got {
				if got[i] != tt.want[i] {
					t.Fatalf("records %q, want %q", got, tt.want)
				}
			}
		})
	}
	if got := router.Mode(42).String(); got != "Unknown" {
		t.Errorf("Mode(42).String() = %q, want Unknown", got)
	}
}
