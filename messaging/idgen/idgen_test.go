package idgen_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"

	merrors "github.com/cairn-go/cairn/messaging/errors"
	"github.com/cairn-go/cairn/messaging/idgen"
)

// goldenCase is one entry of testdata/golden.json: the IDs loafer-awsx
// produces, computed outside Go from its documented algorithm (key-based:
// sorted key+sep+value pairs joined by sep, then hashed; composite: values
// in WithFields order, or sorted by key, joined by sep).
type goldenCase struct {
	Name       string            `json:"name"`
	Generator  string            `json:"generator"`
	Fields     map[string]string `json:"fields"`
	Want       string            `json:"want"`
	WithFields []string          `json:"with_fields"`
	Hash       string            `json:"hash"`
	Separator  string            `json:"separator"`
}

func TestGolden(t *testing.T) {
	t.Parallel()
	raw, err := os.ReadFile("testdata/golden.json")
	if err != nil {
		t.Fatal(err)
	}
	var cases []goldenCase
	if err := json.Unmarshal(raw, &cases); err != nil {
		t.Fatal(err)
	}
	if len(cases) == 0 {
		t.Fatal("no golden cases")
	}
	for _, tc := range cases {
		t.Run(tc.Name, func(t *testing.T) {
			t.Parallel()
			var opts []idgen.Option
			if len(tc.WithFields) > 0 {
				opts = append(opts, idgen.WithFields(tc.WithFields...))
			}
			if tc.Separator != "" {
				opts = append(opts, idgen.WithSeparator(tc.Separator))
			}
			if tc.Hash == "FNV64" {
				opts = append(opts, idgen.WithHashAlgorithm(idgen.FNV64))
			}
			var g idgen.GroupIDGenerator
			switch tc.Generator {
			case "keybased":
				g = idgen.NewKeyBased(opts...)
			case "composite":
				g = idgen.NewComposite(opts...)
			default:
				t.Fatalf("unknown generator %q", tc.Generator)
			}
			got, err := g.Generate(context.Background(), tc.Fields)
			if err != nil || got != tc.Want {
				t.Fatalf("Generate = %q, %v; want %q", got, err, tc.Want)
			}
		})
	}
}

func TestKeyBasedDeterministic(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	for _, alg := range []idgen.HashAlgorithm{idgen.SHA256, idgen.FNV64} {
		g := idgen.NewKeyBased(idgen.WithHashAlgorithm(alg), idgen.WithFields("order", "tenant"))
		a, _ := g.Generate(ctx, map[string]string{"tenant": "t1", "order": "o1", "noise": "x"})
		b, _ := g.Generate(ctx, map[string]string{"order": "o1", "tenant": "t1", "noise": "y"})
		c, _ := g.Generate(ctx, map[string]string{"order": "o2", "tenant": "t1"})
		if a != b || a == c || a == "" {
			t.Fatalf("alg %d: a=%s b=%s c=%s", alg, a, b, c)
		}
		for _, fields := range []map[string]string{{"other": "x"}, {}, nil} {
			if _, err := g.Generate(ctx, fields); !errors.Is(err, merrors.ErrEmptyFields) {
				t.Fatalf("fields %v: %v", fields, err)
			}
		}
	}
}

func TestCompositeWithSuffix(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := idgen.NewCompositeWithSuffix(idgen.WithSuffixRange(3, 4), idgen.WithFields("b", "a"))
	for range 50 {
		v, err := s.Generate(ctx, map[string]string{"a": "1", "b": "2"})
		if err != nil {
			t.Fatal(err)
		}
		n, _ := strconv.Atoi(v[strings.LastIndex(v, ":")+1:])
		if !strings.HasPrefix(v, "2:1:") || n < 3 || n > 4 {
			t.Fatalf("got %s", v)
		}
	}
	if _, err := idgen.NewCompositeWithSuffix().Generate(ctx, nil); !errors.Is(err, merrors.ErrEmptyFields) {
		t.Fatalf("empty: %v", err)
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

// Invalid options never pass silently: Generate names them.
func TestInvalidOptions(t *testing.T) {
	t.Parallel()
	fields := map[string]string{"a": "1"}
	for _, g := range []idgen.GroupIDGenerator{
		idgen.NewCompositeWithSuffix(idgen.WithSuffixRange(5, 1)),
		idgen.NewKeyBased(idgen.WithHashAlgorithm(9)),
		idgen.NewComposite(idgen.WithHashAlgorithm(-1)),
	} {
		if _, err := g.Generate(context.Background(), fields); !errors.Is(err, merrors.ErrInvalidOption) {
			t.Fatalf("err = %v", err)
		}
	}
	// Empty separator and empty whitelist are ignored, as in loafer-awsx.
	got, err := idgen.NewComposite(idgen.WithSeparator(""), idgen.WithFields()).Generate(context.Background(), map[string]string{"b": "2", "a": "1"})
	if err != nil || got != "1:2" {
		t.Fatalf("got %q %v", got, err)
	}
}
