package idempotency

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cairn-go/cairn/internal/jmespath"
	"github.com/cairn-go/cairn/internal/jsvalue"
)

// DisabledEnv is the environment variable that turns idempotency off (the callback runs
// directly). New reads it once and parses it as Powertools does: trimmed and
// case-insensitive, 1, y, yes, t, true and on disable idempotency; 0, n, no, f, false,
// off and the empty string leave it enabled. Any other value also leaves it enabled
// and is logged once as a warning: Powertools 2.35 throws at construction for it,
// which on Lambda fails every cold start over a setting whose safe reading is "on".
const DisabledEnv = "POWERTOOLS_IDEMPOTENCY_DISABLED"

// Defaults, as in the reference.
const (
	DefaultExpiresAfter      = time.Hour
	DefaultMaxLocalCacheSize = 1000
)

// Options configure a Manager. The zero value is valid apart from the store.
type Options struct {
	// KeyPrefix starts every key (<prefix>#<digest>). Default: the trimmed
	// AWS_LAMBDA_FUNCTION_NAME. Use one prefix per business operation sharing a store.
	// New rejects an empty prefix (no KeyPrefix and no AWS_LAMBDA_FUNCTION_NAME, as
	// in local development and tests) with an *OptionError for KeyPrefix: keys would be
	// "#<digest>", shared silently by every manager on the store.
	KeyPrefix string
	// EventKeyJMESPath selects the part of the payload that identifies a request.
	// Empty uses the whole payload. The Powertools functions powertools_json,
	// powertools_base64 and powertools_base64_gzip are available.
	EventKeyJMESPath string
	// PayloadValidationJMESPath selects the part of the payload whose hash must match
	// the stored record's; empty disables validation.
	PayloadValidationJMESPath string
	// JMESPathFunctions adds custom functions to both expressions. Arguments arrive as
	// encoding/json decodes them (map[string]any, []any, float64, string, bool, nil);
	// the result must be JSON-encodable. Names may not shadow built-in functions.
	JMESPathFunctions map[string]JMESPathFunction
	// SerializeKey, when set, replaces JSON.stringify(deepSort(selection)) for both the
	// key and the validation hash, for a deliberate canonicalisation contract. It
	// receives the selection as encoding/json decodes it. Keys then no longer match
	// the TypeScript library's unless its side uses the same serialisation.
	SerializeKey func(selection any) ([]byte, error)
	// ThrowOnNoKey rejects requests whose key selection is missing (null, undefined,
	// or — as in the reference — any falsy value or object/array without a truthy
	// member) with a *KeyError. Otherwise a null or undefined selection bypasses
	// idempotency (the callback runs unprotected), as in the reference, and is logged:
	// the first bypass of a manager at WARN, later ones at DEBUG. When the expression
	// finds nothing because the payload holds JSON as a string (an API Gateway body,
	// EventKeyJMESPath "body.id"), the warning and the KeyError name the string and
	// the expression that decodes it ("powertools_json(body).id").
	ThrowOnNoKey bool
	// ExpiresAfter is the record lifetime; nil means DefaultExpiresAfter. Nonpositive
	// values are rejected.
	ExpiresAfter *time.Duration
	// HashAlgorithm for keys and validation hashes; empty means MD5.
	HashAlgorithm HashAlgorithm
	// LocalCache keeps completed records in memory, so a replay costs no request.
	LocalCache bool
	// MaxLocalCacheSize bounds the local cache; 0 means DefaultMaxLocalCacheSize.
	MaxLocalCacheSize int
	// ResponseHook, when set, runs on every replayed (stored) response and may replace
	// it. It never runs for a fresh execution.
	ResponseHook func(ctx context.Context, response json.RawMessage, record Record) (json.RawMessage, error)
	// Clock returns the current time; default time.Now.
	Clock func() time.Time
	// Logger receives warnings (no deadline and the first bypass, once per manager; a
	// falsy key on every call, as in the reference); default slog.Default().
	Logger *slog.Logger
	// LookupEnv reads environment variables; default os.LookupEnv.
	LookupEnv func(string) (string, bool)
}

// JMESPathFunction is a custom JMESPath function; see Options.JMESPathFunctions.
type JMESPathFunction func(args []any) (any, error)

func customFunctions(in map[string]JMESPathFunction) map[string]jmespath.Func {
	if len(in) == 0 {
		return nil
	}
	out := make(map[string]jmespath.Func, len(in))
	for name, f := range in {
		out[name] = func(args []jsvalue.Value) (jsvalue.Value, error) {
			goArgs := make([]any, len(args))
			for i, a := range args {
				if b, ok := jsvalue.Stringify(a); ok {
					if err := json.Unmarshal(b, &goArgs[i]); err != nil {
						return jsvalue.Value{}, err
					}
				}
			}
			r, err := f(goArgs)
			if err != nil {
				return jsvalue.Value{}, err
			}
			return toValue(r)
		}
	}
	return out
}

// referenceUnusable are expressions the TypeScript library cannot evaluate: its
// parser caches ASTs in a plain object, so looking up these names finds inherited
// Object.prototype members instead of a parsed expression.
var referenceUnusable = map[string]bool{
	"constructor": true, "hasOwnProperty": true, "isPrototypeOf": true, "propertyIsEnumerable": true,
	"toLocaleString": true, "toString": true, "valueOf": true, "__defineGetter__": true,
	"__defineSetter__": true, "__lookupGetter__": true, "__lookupSetter__": true, "__proto__": true,
}

// Manager makes operations idempotent against a Store. It is safe for concurrent use;
// create it once, outside the Lambda handler.
type Manager struct {
	store        Store
	prefix       string
	keyQuery     *jmespath.Expr
	keyExpr      string
	validation   *jmespath.Expr
	throwOnNoKey bool
	ttlSeconds   float64
	alg          HashAlgorithm
	cache        *lru
	hook         func(context.Context, json.RawMessage, Record) (json.RawMessage, error)
	clock        func() time.Time
	log          *slog.Logger
	disabled     bool
	serialize    func(any) ([]byte, error)

	warnedNoDeadline atomic.Bool
	warnedBypass     atomic.Bool
}

var (
	truthyEnv = map[string]bool{"1": true, "y": true, "yes": true, "t": true, "true": true, "on": true}
	falsyEnv  = map[string]bool{"0": true, "n": true, "no": true, "f": true, "false": true, "off": true}
)

// New validates opts and returns a Manager. It does not contact the store.
func New(store Store, opts Options) (*Manager, error) {
	if store == nil {
		return nil, &OptionError{Field: "store", Value: nil, Reason: "a Store is required"}
	}
	lookup := opts.LookupEnv
	if lookup == nil {
		lookup = os.LookupEnv
	}
	m := &Manager{
		store:        store,
		throwOnNoKey: opts.ThrowOnNoKey,
		alg:          opts.HashAlgorithm,
		hook:         opts.ResponseHook,
		clock:        opts.Clock,
		log:          opts.Logger,
		keyExpr:      opts.EventKeyJMESPath,
		serialize:    opts.SerializeKey,
	}
	if m.alg == "" {
		m.alg = MD5
	}
	if _, err := m.alg.newHash(); err != nil {
		return nil, err
	}
	if m.clock == nil {
		m.clock = time.Now
	}
	if m.log == nil {
		m.log = slog.Default()
	}
	m.prefix = strings.TrimSpace(opts.KeyPrefix)
	if m.prefix == "" {
		fn, _ := lookup("AWS_LAMBDA_FUNCTION_NAME")
		m.prefix = strings.TrimSpace(fn)
	}
	ttl := DefaultExpiresAfter
	if opts.ExpiresAfter != nil {
		ttl = *opts.ExpiresAfter
		if ttl <= 0 {
			return nil, &OptionError{Field: "ExpiresAfter", Value: ttl, Reason: "must be positive"}
		}
	}
	m.ttlSeconds = ttl.Seconds()
	for field, expr := range map[string]string{"EventKeyJMESPath": opts.EventKeyJMESPath, "PayloadValidationJMESPath": opts.PayloadValidationJMESPath} {
		if referenceUnusable[expr] {
			return nil, &OptionError{Field: field, Value: expr, Reason: "the reference parser's expression cache resolves this name to an Object.prototype member and fails every call; quote it or use a longer path"}
		}
	}
	custom := customFunctions(opts.JMESPathFunctions)
	if opts.EventKeyJMESPath != "" {
		q, err := jmespath.Compile(opts.EventKeyJMESPath, custom)
		if err != nil {
			return nil, &OptionError{Field: "EventKeyJMESPath", Value: opts.EventKeyJMESPath, Reason: err.Error()}
		}
		m.keyQuery = q
	}
	if opts.PayloadValidationJMESPath != "" {
		q, err := jmespath.Compile(opts.PayloadValidationJMESPath, custom)
		if err != nil {
			return nil, &OptionError{Field: "PayloadValidationJMESPath", Value: opts.PayloadValidationJMESPath, Reason: err.Error()}
		}
		m.validation = q
	}
	switch {
	case opts.MaxLocalCacheSize < 0:
		return nil, &OptionError{Field: "MaxLocalCacheSize", Value: opts.MaxLocalCacheSize, Reason: "must not be negative"}
	case opts.LocalCache:
		size := opts.MaxLocalCacheSize
		if size == 0 {
			size = DefaultMaxLocalCacheSize
		}
		m.cache = newLRU(size)
	}
	if raw, ok := lookup(DisabledEnv); ok {
		v := strings.ToLower(strings.TrimSpace(raw))
		switch {
		case truthyEnv[v]:
			m.disabled = true
		case falsyEnv[v], v == "":
		default:
			m.log.Warn("idempotency: unrecognised "+DisabledEnv+" value; idempotency stays enabled (want 1/y/yes/t/true/on to disable, 0/n/no/f/false/off to enable)", "value", raw)
		}
	}
	if m.prefix == "" {
		return nil, &OptionError{Field: "KeyPrefix", Value: "", Reason: "empty, and AWS_LAMBDA_FUNCTION_NAME is unset: keys would be \"#<digest>\", shared by every manager on the store; set KeyPrefix to the operation's name"}
	}
	return m, nil
}

// ClearCache empties the local cache. Store records are untouched.
func (m *Manager) ClearCache() { m.cache.clear() }

// KeyPrefix returns the prefix in use.
func (m *Manager) KeyPrefix() string { return m.prefix }

// Key returns the idempotency key and validation hash the manager derives for payload,
// without touching the store. ok is false when the request would bypass idempotency.
func (m *Manager) Key(payload any) (key, validationHash string, ok bool, err error) {
	return m.keysOf(payload)
}

// keysOf derives the key and validation hash of payload with pooled scratch space.
func (m *Manager) keysOf(payload any) (key, vhash string, ok bool, err error) {
	sc := getScratch()
	defer sc.release()
	val, err := sc.toValue(payload)
	if err != nil {
		return "", "", false, err
	}
	return m.keys(sc, val)
}

// keys returns the key and validation hash of val, both substrings of one new string.
func (m *Manager) keys(sc *scratch, val jsvalue.Value) (string, string, bool, error) {
	sel := val
	if m.keyQuery != nil {
		var err error
		sel, err = m.keyQuery.Search(val)
		if err != nil {
			return "", "", false, &KeyError{Query: m.keyExpr, Reason: "key expression failed", Err: err}
		}
		if sel.Kind == jsvalue.Null || sel.Kind == jsvalue.Undefined {
			hint := ""
			if at, rewritten, ok := m.keyQuery.EmbeddedJSON(val); ok {
				switch {
				case at != "@":
					hint = fmt.Sprintf("the payload holds JSON as a string at %s; decode it with powertools_json, e.g. EventKeyJMESPath %q", at, rewritten)
				case rewritten != "":
					hint = fmt.Sprintf("the payload is a string holding JSON; pass it as a json.RawMessage, or decode it with EventKeyJMESPath %q", rewritten)
				default:
					hint = "the payload is a string holding JSON; pass it as a json.RawMessage"
				}
			}
			if m.throwOnNoKey {
				reason := "no data found to create a hashed idempotency key"
				if hint != "" {
					reason += ": " + hint
				}
				return "", "", false, &KeyError{Query: m.keyExpr, Reason: reason}
			}
			m.logBypass(hint)
			return "", "", false, nil
		}
	}
	if missingKey(sel) {
		if m.throwOnNoKey {
			return "", "", false, &KeyError{Query: m.keyExpr, Reason: "no data found to create a hashed idempotency key"}
		}
		m.log.Warn("idempotency: no value found for idempotency key", "jmespath", m.keyExpr)
	}
	var buf [2 * maxDigest]byte
	digests, err := m.appendHash(sc, buf[:0], sel)
	if err != nil {
		return "", "", false, &KeyError{Query: m.keyExpr, Reason: "cannot hash key selection", Err: err}
	}
	keyDigest := len(digests)
	if m.validation != nil {
		v, err := m.validation.Search(val)
		if err != nil {
			return "", "", false, &KeyError{Query: m.validation.String(), Reason: "validation expression failed", Err: err}
		}
		if digests, err = m.appendHash(sc, digests, v); err != nil {
			return "", "", false, &KeyError{Query: m.validation.String(), Reason: "cannot hash validation selection", Err: err}
		}
	}
	both := joinKey(m.prefix, '#', digests)
	split := len(m.prefix) + 1 + keyDigest
	return both[:split], both[split:], true, nil
}

// logBypass reports a request that runs without idempotency because the key
// expression found nothing: at WARN the first time for this manager, then at DEBUG,
// so a systematic misconfiguration is visible without a log line per request.
func (m *Manager) logBypass(hint string) {
	level := slog.LevelDebug
	if !m.warnedBypass.Load() && m.warnedBypass.CompareAndSwap(false, true) {
		level = slog.LevelWarn
	}
	if !m.log.Enabled(context.Background(), level) {
		return
	}
	msg := "idempotency: the key expression found no value; the request runs without idempotency (set ThrowOnNoKey to reject it)"
	if level == slog.LevelWarn {
		msg += "; later occurrences log at DEBUG"
	}
	attrs := []any{"jmespath", m.keyExpr}
	if hint != "" {
		attrs = append(attrs, "hint", hint)
	}
	m.log.Log(context.Background(), level, msg, attrs...)
}

// appendHash appends the digest of a selection, hashed in the canonical form or the
// custom serialiser's, to dst.
func (m *Manager) appendHash(sc *scratch, dst []byte, v jsvalue.Value) ([]byte, error) {
	if m.serialize == nil {
		return sc.appendDigest(dst, v, m.alg)
	}
	var goValue any
	if b, ok := jsvalue.Stringify(v); ok {
		if err := json.Unmarshal(b, &goValue); err != nil {
			return dst, err
		}
	}
	b, err := m.serialize(goValue)
	if err != nil {
		return dst, err
	}
	return m.alg.appendDigest(dst, b)
}

// missingKey is the reference's isMissingIdempotencyKey.
func missingKey(v jsvalue.Value) bool {
	switch v.Kind {
	case jsvalue.Array:
		for _, e := range v.Arr {
			if e.Truthy() {
				return false
			}
		}
		return true
	case jsvalue.Object:
		for _, e := range v.Obj.Members() {
			if e.Val.Truthy() {
				return false
			}
		}
		return true
	default:
		return !v.Truthy()
	}
}

// Execute runs fn at most once per idempotency key derived from payload while the
// record is valid: the first call acquires the key with a conditional write, runs fn
// and stores its JSON-encoded result; later calls replay the stored result (decoded
// into T) without running fn. A concurrent call gets an *AlreadyInProgressError. A
// business error deletes the in-progress record so the request can be retried.
//
// The key is computed before fn runs, so fn mutating the payload changes nothing.
// The context deadline sets the execution lease.
func Execute[T any](ctx context.Context, m *Manager, payload any, fn func(context.Context) (T, error)) (T, error) {
	if m.disabled {
		return fn(ctx)
	}
	var zero T
	key, vhash, ok, err := m.keysOf(payload)
	if err != nil {
		return zero, err
	}
	if !ok {
		return fn(ctx)
	}
	for attempt := 0; ; attempt++ {
		out, err := attemptOnce(ctx, m, key, vhash, fn)
		if err != nil && errors.Is(err, ErrInconsistentState) && attempt < MaxRetries {
			continue
		}
		return out, err
	}
}

// WrapHandler makes a typed Lambda handler idempotent, using the whole event as the
// payload. The result has the shape lambda.Start accepts.
func WrapHandler[In, Out any](m *Manager, h func(context.Context, In) (Out, error)) func(context.Context, In) (Out, error) {
	return func(ctx context.Context, event In) (Out, error) {
		return Execute(ctx, m, event, func(ctx context.Context) (Out, error) { return h(ctx, event) })
	}
}

// expiry is the reference's Math.round(Date.now()/1000 + expiresAfterSeconds).
func (m *Manager) expiry(now time.Time) int64 {
	return int64(math.Floor(float64(now.UnixMilli())/1000 + m.ttlSeconds + 0.5))
}

func attemptOnce[T any](ctx context.Context, m *Manager, key, vhash string, fn func(context.Context) (T, error)) (T, error) {
	var zero T
	now := m.clock()
	rec := Record{Key: key, Status: StatusInProgress, ExpiresAt: m.expiry(now), ValidationHash: vhash}
	if deadline, ok := ctx.Deadline(); ok {
		rec.InProgressExpiresAt = deadline.UnixMilli()
	} else if !m.warnedNoDeadline.Load() && m.warnedNoDeadline.CompareAndSwap(false, true) {
		m.log.Warn("idempotency: context has no deadline, so records get no execution lease and the record expiry bounds recovery from a crashed execution; logged once per manager", "key", key)
	}
	if cached, ok := m.cache.get(key, now); ok {
		return replay[T](ctx, m, cached, vhash, now, true)
	}
	err := m.store.PutInProgress(ctx, rec, now)
	if err != nil {
		// A type assertion first: errors.As needs the target on the heap.
		exists, ok := err.(*ItemAlreadyExistsError)
		if !ok {
			var wrapped *ItemAlreadyExistsError
			if !errors.As(err, &wrapped) {
				return zero, &PersistenceError{Op: "save in progress", Key: key, Err: err}
			}
			exists = wrapped
		}
		existing := exists.Existing
		if existing == nil {
			got, gerr := m.store.Get(ctx, key)
			if errors.Is(gerr, ErrItemNotFound) {
				return zero, &InconsistentStateError{Key: key, Reason: "record disappeared after a conflicting write"}
			}
			if gerr != nil {
				return zero, &PersistenceError{Op: "get", Key: key, Err: gerr}
			}
			existing = &got
		}
		return replay[T](ctx, m, *existing, vhash, m.clock(), false)
	}
	return run(ctx, m, key, vhash, fn)
}

// replay validates an existing record and returns its stored response, as the
// reference's processExistingRecord and determineResultFromIdempotencyRecord do.
// existing is taken by value and copied only into errors, so a replay does not
// allocate a record.
func replay[T any](ctx context.Context, m *Manager, existing Record, vhash string, now time.Time, fromCache bool) (T, error) {
	var zero T
	if vhash != "" && existing.ValidationHash != vhash {
		rec := existing
		return zero, &ValidationError{Key: existing.Key, Existing: &rec}
	}
	if !fromCache {
		m.cache.add(existing)
	}
	status, err := existing.EffectiveStatus(now)
	if err != nil {
		return zero, err
	}
	switch status {
	case StatusExpired:
		return zero, &InconsistentStateError{Key: existing.Key, Reason: "item has expired during processing and may no longer be valid"}
	case StatusInProgress:
		// The reference compares the lease with getUTCMilliseconds(); cairn compares
		// full Unix milliseconds.
		if existing.InProgressExpiresAt != 0 && existing.InProgressExpiresAt < now.UnixMilli() {
			return zero, &InconsistentStateError{Key: existing.Key, Reason: "item is in progress but its lease has expired"}
		}
		rec := existing
		return zero, &AlreadyInProgressError{Key: existing.Key, Existing: &rec}
	}
	data := existing.Data
	if m.hook != nil {
		data, err = m.hook(ctx, append(json.RawMessage(nil), data...), existing)
		if err != nil {
			return zero, err
		}
	}
	var out T
	if len(data) == 0 {
		return out, nil
	}
	if err := decodeResponse(data, &out); err != nil {
		return zero, &UnsupportedValueError{Reason: fmt.Sprintf("stored response for %s does not decode into %T", existing.Key, out), Err: err}
	}
	return out, nil
}

// responseDecoder is a reusable json.Decoder over one stored response at a time.
// Decoding with it is json.Unmarshal without Unmarshal's per-call state (its decoder,
// scanner stack and error context), which is most of a replay's allocations.
type responseDecoder struct {
	r   bytes.Reader
	dec *json.Decoder
}

var responseDecoders = sync.Pool{New: func() any {
	d := new(responseDecoder)
	d.dec = json.NewDecoder(&d.r)
	return d
}}

// maxPooledResponse keeps a decoder whose buffer grew for a large response out of the pool.
const maxPooledResponse = 16 << 10

// decodeResponse is json.Unmarshal(data, out). A pooled decoder decodes the one value
// data holds; anything else (an error, trailing data, a large response) goes to
// json.Unmarshal from the zero value, so results and errors are exactly
// Unmarshal's. As with Unmarshal, an UnmarshalJSON method must copy the bytes it
// keeps: they belong to the decoder.
func decodeResponse[T any](data []byte, out *T) error {
	if len(data) <= maxPooledResponse {
		d := responseDecoders.Get().(*responseDecoder)
		d.r.Reset(data)
		start := d.dec.InputOffset()
		if err := d.dec.Decode(out); err == nil && d.dec.InputOffset()-start == int64(len(data)) {
			d.r.Reset(nil)
			responseDecoders.Put(d)
			return nil
		}
		// The decoder may hold an error or unread input: drop it.
		var zero T
		*out = zero
	}
	return json.Unmarshal(data, out)
}

// run executes fn under an acquired key and records the outcome.
func run[T any](ctx context.Context, m *Manager, key, vhash string, fn func(context.Context) (T, error)) (out T, err error) {
	var zero T
	completed := false
	defer func() {
		if completed {
			return
		}
		if p := recover(); p != nil {
			// Best effort: free the key so a retry can run, then re-panic unchanged.
			_ = m.store.Delete(ctx, key)
			m.cache.remove(key)
			panic(p)
		}
	}()
	out, err = fn(ctx)
	completed = true
	if err != nil {
		return zero, m.cleanup(ctx, key, err)
	}
	data, merr := json.Marshal(out)
	if merr != nil {
		return zero, m.cleanup(ctx, key, &UnsupportedValueError{Reason: "response is not representable as JSON", Err: merr})
	}
	now := m.clock()
	rec := Record{Key: key, Status: StatusCompleted, ExpiresAt: m.expiry(now), Data: data, ValidationHash: vhash}
	if err := m.store.Complete(ctx, rec, now); err != nil {
		return zero, &PersistenceError{Op: "update success", Key: key, Err: err}
	}
	m.cache.add(rec)
	return out, nil
}

// cleanup deletes the in-progress record after a failed execution; a failed delete is
// joined to the original error so neither is lost.
func (m *Manager) cleanup(ctx context.Context, key string, cause error) error {
	m.cache.remove(key)
	if derr := m.store.Delete(ctx, key); derr != nil {
		return errors.Join(cause, &PersistenceError{Op: "delete", Key: key, Err: derr})
	}
	return cause
}
