package idempotency_test

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"os"
	"testing"

	"github.com/cairn-go/cairn/idempotency"
	"github.com/cairn-go/cairn/idempotency/idempotencytest"
)

type keyCase struct {
	Name             string `json:"name"`
	PayloadB64       string `json:"payload_b64"`
	Prefix           string `json:"prefix"`
	HashFunction     string `json:"hash_function"`
	EventKeyJMESPath string `json:"event_key_jmespath"`
	Key              string `json:"key"`
	Canonical        string `json:"canonical"`
	Error            string `json:"error"`
	Bypass           bool   `json:"bypass"`
}

func loadKeyCases(t testing.TB) []keyCase {
	t.Helper()
	raw, err := os.ReadFile("testdata/keys.json")
	if err != nil {
		t.Fatal(err)
	}
	var f struct {
		Generator string    `json:"generator"`
		Cases     []keyCase `json:"cases"`
	}
	if err := json.Unmarshal(raw, &f); err != nil {
		t.Fatal(err)
	}
	if f.Generator != "@aws-lambda-powertools/idempotency@2.35.0" || len(f.Cases) < 40 {
		t.Fatalf("unexpected golden file: %s with %d cases", f.Generator, len(f.Cases))
	}
	return f.Cases
}

// TestGoldenKeys compares cairn's keys with those the TypeScript library produced.
func TestGoldenKeys(t *testing.T) {
	t.Parallel()
	for _, c := range loadKeyCases(t) {
		t.Run(c.Name, func(t *testing.T) {
			t.Parallel()
			payload, err := base64.StdEncoding.DecodeString(c.PayloadB64)
			if err != nil {
				t.Fatal(err)
			}
			m, err := idempotency.New(idempotencytest.NewMemoryStore(), idempotency.Options{
				KeyPrefix:        c.Prefix,
				EventKeyJMESPath: c.EventKeyJMESPath,
				HashAlgorithm:    idempotency.HashAlgorithm(c.HashFunction),
				LookupEnv:        func(string) (string, bool) { return "", false },
			})
			if err != nil {
				if c.Error != "" && errors.Is(err, idempotency.ErrInvalidOption) {
					return // rejected at construction instead of on every call
				}
				t.Fatal(err)
			}
			key, _, ok, err := m.Key(json.RawMessage(payload))
			if c.Error != "" {
				if err == nil {
					t.Fatalf("want error %s, got key %s", c.Error, key)
				}
				return
			}
			if c.Bypass {
				if err != nil || ok {
					t.Fatalf("selection is null: want bypass, got key %q, %v", key, err)
				}
				return
			}
			if err != nil || !ok {
				t.Fatalf("Key: ok=%v err=%v", ok, err)
			}
			if key != c.Key {
				t.Errorf("key %s, want %s (reference canonical form %s)", key, c.Key, c.Canonical)
			}
			if c.EventKeyJMESPath == "" {
				canon, err := idempotency.CanonicalJSON(json.RawMessage(payload))
				if err != nil {
					t.Fatal(err)
				}
				if string(canon) != c.Canonical {
					t.Errorf("canonical\n got %s\nwant %s", canon, c.Canonical)
				}
				k, err := idempotency.Key(c.Prefix, json.RawMessage(payload), idempotency.HashAlgorithm(c.HashFunction))
				if err != nil || k != c.Key {
					t.Errorf("Key() = %s, %v; want %s", k, err, c.Key)
				}
			}
		})
	}
}
