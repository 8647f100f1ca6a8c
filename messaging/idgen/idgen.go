// Package idgen generates MessageGroupId and MessageDeduplicationId values
// for FIFO topics and queues from message fields.
package idgen

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"hash/fnv"
	"math/big"
	"sort"
	"strconv"
	"strings"

	merrors "github.com/cairn-go/cairn/messaging/errors"
)

// GroupIDGenerator produces a MessageGroupId.
type GroupIDGenerator interface {
	Generate(ctx context.Context, fields map[string]string) (string, error)
}

// DeduplicationIDGenerator produces a MessageDeduplicationId.
type DeduplicationIDGenerator interface {
	Generate(ctx context.Context, fields map[string]string) (string, error)
}

// HashAlgorithm is the digest of NewKeyBased.
type HashAlgorithm int

// Hash algorithms.
const (
	SHA256 HashAlgorithm = iota
	FNV64
)

// Option configures a generator.
type Option func(*Generator) error

// WithHashAlgorithm selects SHA256 (default) or FNV64.
func WithHashAlgorithm(a HashAlgorithm) Option {
	return func(g *Generator) error {
		if a != SHA256 && a != FNV64 {
			return fmt.Errorf("WithHashAlgorithm: unknown algorithm %d", int(a))
		}
		g.alg = a
		return nil
	}
}

// WithSeparator sets the separator joining key/value pairs (default ":").
func WithSeparator(sep string) Option {
	return func(g *Generator) error { g.sep = sep; return nil }
}

// WithFields restricts the fields used (default: all, sorted by name).
func WithFields(fields ...string) Option {
	return func(g *Generator) error {
		for i, f := range fields {
			if f == "" {
				return fmt.Errorf("WithFields: field %d is empty", i)
			}
		}
		g.fields = append([]string(nil), fields...)
		return nil
	}
}

// WithSuffixRange sets the inclusive suffix range of NewCompositeWithSuffix
// (default [1, 20]); min must be >= 0 and <= max.
func WithSuffixRange(min, max int) Option {
	return func(g *Generator) error {
		if min < 0 || max < min {
			return fmt.Errorf("WithSuffixRange: [%d, %d] is not a valid range", min, max)
		}
		g.lo, g.hi = min, max
		return nil
	}
}

type kind int

const (
	keyBased kind = iota
	random
	composite
	compositeSuffix
)

// Generator implements both GroupIDGenerator and DeduplicationIDGenerator.
type Generator struct {
	kind   kind
	alg    HashAlgorithm
	sep    string
	fields []string
	lo, hi int
}

func build(k kind, opts []Option) (*Generator, error) {
	g := &Generator{kind: k, sep: ":", lo: 1, hi: 20}
	for _, o := range opts {
		if o == nil {
			continue
		}
		if err := o(g); err != nil {
			return nil, merrors.Wrap(merrors.ErrInvalidOption, err)
		}
	}
	return g, nil
}

// NewKeyBased hashes the sorted selected field values: the same fields give
// the same ID. Generate returns ErrEmptyFields when no field is selected.
func NewKeyBased(opts ...Option) (*Generator, error) { return build(keyBased, opts) }

// NewRandom returns a random UUID v4 on every call, ignoring fields.
func NewRandom() *Generator { return &Generator{kind: random} }

// NewComposite joins the selected fields' key/value pairs with the separator.
func NewComposite(opts ...Option) (*Generator, error) { return build(composite, opts) }

// NewCompositeWithSuffix is NewComposite plus a random suffix from the
// configured range, spreading one logical key over several FIFO groups.
func NewCompositeWithSuffix(opts ...Option) (*Generator, error) { return build(compositeSuffix, opts) }

// Generate produces an ID from fields.
func (g *Generator) Generate(_ context.Context, fields map[string]string) (string, error) {
	if g.kind == random {
		return uuid4()
	}
	pairs, err := g.pairs(fields)
	if err != nil {
		return "", err
	}
	joined := strings.Join(pairs, g.sep)
	switch g.kind {
	case keyBased:
		if g.alg == FNV64 {
			h := fnv.New64a()
			h.Write([]byte(joined))
			return strconv.FormatUint(h.Sum64(), 16), nil
		}
		sum := sha256.Sum256([]byte(joined))
		return hex.EncodeToString(sum[:]), nil
	case compositeSuffix:
		n, err := rand.Int(rand.Reader, big.NewInt(int64(g.hi-g.lo+1)))
		if err != nil {
			return "", err
		}
		return joined + g.sep + strconv.FormatInt(n.Int64()+int64(g.lo), 10), nil
	}
	return joined, nil
}

func (g *Generator) pairs(fields map[string]string) ([]string, error) {
	names := g.fields
	if len(names) == 0 {
		for k := range fields {
			names = append(names, k)
		}
	} else {
		names = append([]string(nil), names...)
	}
	sort.Strings(names)
	var pairs []string
	for _, k := range names {
		if v, ok := fields[k]; ok {
			pairs = append(pairs, k+"="+v)
		}
	}
	if len(pairs) == 0 {
		return nil, merrors.ErrEmptyFields
	}
	return pairs, nil
}

func uuid4() (string, error) {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", err
	}
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	h := hex.EncodeToString(b[:])
	return h[:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:], nil
}
