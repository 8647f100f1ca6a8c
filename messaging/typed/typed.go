// Package typed adds generic, type-safe handlers and producers on top of
// middleware.Handler and producer.Producer through a Codec[T].
package typed

import (
	"context"
	"encoding/json"
	"fmt"

	merrors "github.com/cairn-go/cairn/messaging/errors"
	"github.com/cairn-go/cairn/messaging/middleware"
	"github.com/cairn-go/cairn/messaging/producer"
)

// Codec encodes and decodes T.
type Codec[T any] interface {
	Encode(v T) ([]byte, error)
	Decode(data []byte) (T, error)
}

// JSONCodec is the encoding/json Codec.
type JSONCodec[T any] struct{}

// Encode marshals v.
func (JSONCodec[T]) Encode(v T) ([]byte, error) { return json.Marshal(v) }

// Decode unmarshals data.
func (JSONCodec[T]) Decode(data []byte) (T, error) {
	var v T
	err := json.Unmarshal(data, &v)
	return v, err
}

// WrapHandler adapts fn to a middleware.Handler. A body that does not decode
// can never succeed, so the decode error is returned as fatal.
func WrapHandler[T any](codec Codec[T], fn func(ctx context.Context, msg T) error) middleware.Handler {
	return func(ctx context.Context, msg middleware.Message) error {
		// The published message: the body, or for an SNS notification
		// (a subscription without raw delivery) the envelope's Message.
		v, err := codec.Decode([]byte(msg.Message()))
		if err != nil {
			if id := middleware.MessageID(msg); id != "" {
				return merrors.Fatal(fmt.Errorf("typed: decode message %s: %w", id, err))
			}
			return merrors.Fatal(fmt.Errorf("typed: decode message: %w", err))
		}
		return fn(ctx, v)
	}
}

// Producer publishes values of T.
type Producer[T any] struct {
	p     *producer.Producer
	codec Codec[T]
}

// NewProducer wraps p with codec.
func NewProducer[T any](p *producer.Producer, codec Codec[T]) *Producer[T] {
	return &Producer[T]{p: p, codec: codec}
}

// PublishOption configures one Publish.
type PublishOption func(*producer.PublishInput)

// WithGroupID sets MessageGroupId.
func WithGroupID(id string) PublishOption {
	return func(in *producer.PublishInput) { in.GroupID = id }
}

// WithDeduplicationID sets MessageDeduplicationId.
func WithDeduplicationID(id string) PublishOption {
	return func(in *producer.PublishInput) { in.DeduplicationID = id }
}

// WithAttributes adds string message attributes.
func WithAttributes(attrs map[string]string) PublishOption {
	return func(in *producer.PublishInput) {
		if in.Attributes == nil {
			in.Attributes = make(map[string]string, len(attrs))
		}
		for k, v := range attrs {
			in.Attributes[k] = v
		}
	}
}

// Publish encodes value and publishes it, returning the MessageId.
func (p *Producer[T]) Publish(ctx context.Context, topicARN string, value T, opts ...PublishOption) (string, error) {
	body, err := p.codec.Encode(value)
	if err != nil {
		return "", fmt.Errorf("typed: encode: %w", err)
	}
	in := &producer.PublishInput{TopicARN: topicARN, Message: string(body)}
	for _, o := range opts {
		if o != nil {
			o(in)
		}
	}
	return p.p.Publish(ctx, in)
}
