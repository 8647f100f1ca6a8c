package idgen_test

import (
	"context"
	"errors"
	"regexp"
	"strconv"
	"strings"
	"testing"

	merrors "github.com/cairn-go/cairn/messaging/errors"
	"github.com/cairn-go/cairn/messaging/idgen"
)

func TestKeyBasedDeterministic(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	for _, alg := range []idgen.HashAlgorithm{idgen.SHA256, idgen.FNV64} {
		g, err := idgen.NewKeyBased(idgen.WithHashAlgorithm(alg), idgen.WithFields("order", "tenant"))
		if err != nil {
			t.Fatal(err)
		}
		a, _ := g.Generate(ctx, map[string]string{"tenant": "t1", "order": "o1", "noise": "x"})
		b, _ := g.Generate(ctx, map[string]string{"order": "o1", "tenant": "t1", "noise": "y"})
		c, _ := g.Generate(ctx, map[string]string{"order": "o2", "tenant": "t1"})
		if a != b || a == c || a == "" {
			t.Fatalf("alg %d: a=%s b=%s c=%s", alg, a, b, c)
		}
		if _, err := g.Generate(ctx, map[string]string{"other": "x"}); !errors.Is(err, merrors.ErrEmptyFields) {
			t.Fatalf("no fields: %v", err)
		}
	}
}

func TestComposite(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	g, _ := idgen.NewComposite(idgen.WithSeparator("|"))
	got, err := g.Generate(ctx, map[string]string{"b": "2", "a": "1"})
	if err != nil || got != "a=1|b=2" {
		t.Fatalf("got %q %v", got, err)
	}
	s, _ := idgen.NewCompositeWithSuffix(idgen.WithSuffixRange(3, 4))
	for range 50 {
		v, err := s.Generate(ctx, map[string]string{"a": "1"})
		if err != nil {
			t.Fatal(err)
		}
		n, _ := strconv.Atoi(v[strings.LastIndex(v, ":")+1:])
		if !strings.HasPrefix(v, "a=1:") || n < 3 || n > 4 {
			t.Fatalf("suffix out of range: %s", v)
		}
	}
}

func TestRandomUUID(t *testing.T) {
	t.Parallel()
	re := regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`)
	g := idgen.NewRandom()
	a, _ := g.Generate(context.Background(), nil)
	b, _ := g.Generate(context.Background(), nil)
	if !re.MatchString(a) || a == b {
		t.Fatalf("a=%s b=%s", a, b)
	}
}

func TestOptionValidation(t *testing.T) {
	t.Parallel()
	for _, o := range []idgen.Option{idgen.WithSuffixRange(5, 1), idgen.WithSuffixRange(-1, 2),
		idgen.WithHashAlgorithm(9), idgen.WithFields("")} {
		if _, err := idgen.NewCompositeWithSuffix(o); !errors.Is(err, merrors.ErrInvalidOption) {
			t.Fatalf("err = %v", err)
		}
	}
}
