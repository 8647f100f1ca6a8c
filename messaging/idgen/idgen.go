// Package idgen generates MessageGroupId and MessageDeduplicationId values
// for FIFO topics and queues from message fields (the producer passes a
// message's string attributes). Its output is byte-identical to
// loafer-awsx's, so a migrating producer keeps its FIFO groups.
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

// GroupIDGenerator produces a MessageGroupId from message fields. It must be
// safe for concurrent use.
type GroupIDGenerator interface {
	Generate(ctx context.Context, fields map[string]string) (string, error)
}

// DeduplicationIDGenerator produces a MessageDeduplicationId from message
// fields. Its method set equals GroupIDGenerator's, so every generator here
// is both.
type DeduplicationIDGenerator interface {
	Generate(ctx context.Context, fields map[string]string) (string, error)
}

// HashAlgorithm is the digest of NewKeyBased.
type HashAlgorithm int

const (
	// SHA256 encodes the SHA-256 digest as lowercase hex (the default).
	SHA256 HashAlgorithm = iota
	// FNV64 encodes the 64-bit FNV-1a hash as lowercase hex, without
	// leading zeros.
	FNV64
)

// Defaults of the generator options.
const (
	DefaultSeparator = ":"
	DefaultSuffixMin = 1
	DefaultSuffixMax = 20
)

// Option configures a generator.
type Option func(*generatorConfig)

type generatorConfig struct {
	separator string
	fields    []string
	algorithm HashAlgorithm
	suffixMin int
	suffixMax int
	err       error // the first invalid option, reported by Generate
}

func (c *generatorConfig) invalid(format string, a ...any) {
	if c.err == nil {
		c.err = merrors.Wrap(merrors.ErrInvalidOption, fmt.Errorf(format, a...))
	}
}

// WithHashAlgorithm selects SHA256 (default) or FNV64. Any other value makes
// Generate fail with an error wrapping ErrInvalidOption.
func WithHashAlgorithm(algorithm HashAlgorithm) Option {
	return func(c *generatorConfig) {
		if algorithm != SHA256 && algorithm != FNV64 {
			c.invalid("idgen.WithHashAlgorithm: unknown algorithm %d", int(algorithm))
			return
		}
		c.algorithm = algorithm
	}
}

// WithSeparator sets the separator (default ":"). An empty separator is
// ignored.
func WithSeparator(separator string) Option {
	return func(c *generatorConfig) {
		if separator != "" {
			c.separator = separator
		}
	}
}

// WithFields restricts the fields used to those listed (default: all
// fields). NewComposite joins values in the listed order; NewKeyBased sorts
// the keys. An empty list is ignored.
func WithFields(fields ...string) Option {
	return func(c *generatorConfig) {
		if len(fields) > 0 {
			c.fields = append([]string(nil), fields...)
		}
	}
}

// WithSuffixRange sets the inclusive range of NewCompositeWithSuffix's random
// suffix (default [1, 20]). With minSuffix > maxSuffix, Generate fails with
// an error wrapping ErrInvalidOption.
func WithSuffixRange(minSuffix, maxSuffix int) Option {
	return func(c *generatorConfig) { c.suffixMin, c.suffixMax = minSuffix, maxSuffix }
}

func newConfig(opts []Option) generatorConfig {
	c := generatorConfig{separator: DefaultSeparator, suffixMin: DefaultSuffixMin, suffixMax: DefaultSuffixMax}
	for _, o := range opts {
		if o != nil {
			o(&c)
		}
	}
	return c
}

type keyBased struct{ c generatorConfig }

// NewKeyBased returns a deterministic generator: the selected fields sorted
// by key, each written key+separator+value, joined with the separator and
// hashed (SHA256 by default). Equal fields give equal IDs. Generate returns
// ErrEmptyFields when no field is selected.
func NewKeyBased(opts ...Option) GroupIDGenerator { return &keyBased{c: newConfig(opts)} }

func (g *keyBased) Generate(_ context.Context, fields map[string]string) (string, error) {
	if g.c.err != nil {
		return "", g.c.err
	}
	keys := selectKeys(g.c.fields, fields)
	if len(keys) == 0 {
		return "", merrors.ErrEmptyFields
	}
	sort.Strings(keys)
	var sb strings.Builder
	for i, k := range keys {
		if i > 0 {
			sb.WriteString(g.c.separator)
		}
		sb.WriteString(k)
		sb.WriteString(g.c.separator)
		sb.WriteString(fields[k])
	}
	if g.c.algorithm == FNV64 {
		h := fnv.New64a()
		h.Write([]byte(sb.String()))
		return strconv.FormatUint(h.Sum64(), 16), nil
	}
	sum := sha256.Sum256([]byte(sb.String()))
	return hex.EncodeToString(sum[:]), nil
}

// selectKeys returns the whitelisted keys present in fields, in whitelist
// order, or every key of fields (unsorted) without a whitelist.
func selectKeys(whitelist []string, fields map[string]string) []string {
	if len(whitelist) == 0 {
		keys := make([]string, 0, len(fields))
		for k := range fields {
			keys = append(keys, k)
		}
		return keys
	}
	keys := make([]string, 0, len(whitelist))
	for _, k := range whitelist {
		if _, ok := fields[k]; ok {
			keys = append(keys, k)
		}
	}
	return keys
}

type composite struct{ c generatorConfig }

// NewComposite returns a generator joining the selected field values with
// the separator, unhashed: in WithFields order, or sorted by key without
// WithFields. Generate returns ErrEmptyFields when no field is selected.
func NewComposite(opts ...Option) GroupIDGenerator { return &composite{c: newConfig(opts)} }

func (g *composite) Generate(_ context.Context, fields map[string]string) (string, error) {
	if g.c.err != nil {
		return "", g.c.err
	}
	return join(g.c, fields)
}

func join(c generatorConfig, fields map[string]string) (string, error) {
	keys := selectKeys(c.fields, fields)
	if len(keys) == 0 {
		return "", merrors.ErrEmptyFields
	}
	if len(c.fields) == 0 {
		sort.Strings(keys)
	}
	var sb strings.Builder
	for i, k := range keys {
		if i > 0 {
			sb.WriteString(c.separator)
		}
		sb.WriteString(fields[k])
	}
	return sb.String(), nil
}

type compositeWithSuffix struct{ c generatorConfig }

// NewCompositeWithSuffix is NewComposite followed by the separator and a
// random integer from the WithSuffixRange range, spreading one key over
// several FIFO groups.
func NewCompositeWithSuffix(opts ...Option) GroupIDGenerator {
	return &compositeWithSuffix{c: newConfig(opts)}
}

func (g *compositeWithSuffix) Generate(_ context.Context, fields map[string]string) (string, error) {
	if g.c.err != nil {
		return "", g.c.err
	}
	if g.c.suffixMin > g.c.suffixMax {
		return "", merrors.Wrap(merrors.ErrInvalidOption,
			fmt.Errorf("idgen.WithSuffixRange: [%d, %d] is not a valid range", g.c.suffixMin, g.c.suffixMax))
	}
	prefix, err := join(g.c, fields)
	if err != nil {
		return "", err
	}
	n, err := rand.Int(rand.Reader, big.NewInt(int64(g.c.suffixMax)-int64(g.c.suffixMin)+1))
	if err != nil {
		return "", err
	}
	return prefix + g.c.separator + strconv.FormatInt(n.Int64()+int64(g.c.suffixMin), 10), nil
}

type random struct{}

// NewRandom returns a generator of random UUID v4 strings; it ignores
// fields.
func NewRandom() GroupIDGenerator { return random{} }

func (random) Generate(context.Context, map[string]string) (string, error) {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", err
	}
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	h := hex.EncodeToString(b[:])
	return h[:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:], nil
}
