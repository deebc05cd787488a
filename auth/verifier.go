package auth

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/gemgate/gemgate/internal/aside"
)

// maxTokenBytes bounds the tokens gemgate parses at all.
const maxTokenBytes = 16 << 10

// TokenVerifier checks a raw bearer token and returns its principal.
type TokenVerifier interface {
	Verify(ctx context.Context, raw string) (Principal, error)
}

// Verifier checks JWT access tokens of one issuer. Build it once with
// [NewVerifier]; it is safe for concurrent use.
type Verifier struct {
	cfg   Config
	keys  *remoteKeySet
	cache *tokenCache
}

var _ TokenVerifier = (*Verifier)(nil)

// NewVerifier validates cfg, discovers the issuer's JWKS (unless cfg.JWKSURL is set) and
// loads its keys, failing when they cannot be reached: for `gemgate check` and tests. A
// server starts with [StartVerifier].
func NewVerifier(ctx context.Context, cfg Config) (*Verifier, error) {
	v, err := prepareVerifier(cfg)
	if err != nil {
		return nil, err
	}
	if err := v.keys.refresh(ctx, 0); err != nil {
		return nil, fmt.Errorf("auth: loading signing keys of issuer %q: %w", v.cfg.Issuer, err)
	}
	return v, nil
}

// StartVerifier validates cfg and makes one attempt at discovery and the keys, then retries
// in the background until the keys load or ctx ends; until then Verify and Ready return a
// an error wrapping [ErrKeysUnavailable], not [ErrInvalidToken]: an issuer that is down is no reason to stop,
// or to call tokens invalid. Only bad config is an error.
func StartVerifier(ctx context.Context, cfg Config) (*Verifier, error) {
	v, err := prepareVerifier(cfg)
	if err != nil {
		return nil, err
	}
	if err := v.keys.refresh(ctx, 0); err != nil && ctx.Err() == nil {
		go v.keys.load(ctx)
	}
	return v, nil
}

// prepareVerifier builds a verifier whose key set has nothing loaded yet.
func prepareVerifier(cfg Config) (*Verifier, error) {
	cfg = cfg.withDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	v := &Verifier{cfg: cfg, keys: newRemoteKeySet(cfg), cache: newTokenCache(cfg.CacheSize)}
	v.keys.onWithdraw = v.cache.clear
	return v, nil
}

// Ready returns nil when signing keys are loaded (for /readyz). Before they are, it asks the
// background loader to try again soon (it keeps a minimum gap) and returns an error wrapping
// [ErrKeysUnavailable].
func (v *Verifier) Ready(context.Context) error {
	if v.keys.keys.Load() != nil { // loaded once; empty only when the issuer withdrew every key since
		return nil
	}
	return v.keys.unloaded()
}

// Health returns the last attempt's error at fetching the issuer's keys. An attempt older than
// healthInterval is repeated first, so that a probe notices an issuer gone within seconds,
// unless one is under way (or outlives ctx): then the last finished one answers. Tokens keep
// being verified with the keys loaded either way.
func (v *Verifier) Health(ctx context.Context) error {
	ks := v.keys
	var err error
	if ks.fetching.Load() {
		err = ks.lastError()
	} else if err = ks.refresh(ctx, min(v.cfg.KeyRefreshInterval, healthInterval)); err != nil && ctx.Err() != nil {
		err = ks.lastError()
	}
	switch {
	case errors.Is(err, errNoUsableKey):
		return fmt.Errorf("issuer publishes no signing key gemgate can use (every token refused): %w", err)
	case err != nil:
		return fmt.Errorf("issuer keys unreachable (cached keys in use): %w", err)
	}
	return nil
}

// Verify checks raw and returns its principal. See [FailureReason] for the failures' labels.
func (v *Verifier) Verify(ctx context.Context, raw string) (Principal, error) {
	if raw == "" {
		return Principal{}, malformedError("empty")
	}
	if len(raw) > maxTokenBytes {
		return Principal{}, malformedError("larger than 16 KiB")
	}
	now := time.Now()
	var key [sha256.Size]byte
	var gen uint64
	if v.cache != nil {
		key = tokenKey(raw)
		// A key set past keyMaxAge is refreshed by the next lookup, which may find the token's
		// key withdrawn: until then no cached verification stands in for that lookup.
		if v.keys.fresh(now) {
			if p, live, found := v.cache.get(key, now); found {
				if !live {
					return Principal{}, expiredError(p.Expiry, now)
				}
				noteCached(ctx)
				return p.clone(), nil
			}
		}
		gen = v.cache.generation() // before the check: a clear from here on drops its result
	}
	// The full check is deep, and the request may go on to hold an idle stream for hours: it
	// runs aside, so its frames leave no doubled stack on the caller's goroutine.
	var p Principal
	var err error
	aside.Run(func() { p, err = v.verify(ctx, raw, now) })
	if err != nil {
		return Principal{}, err
	}
	if v.cache != nil {
		v.cache.put(key, p, p.Expiry.Add(DefaultClockSkew), now, gen)
	}
	return p.clone(), nil
}

// verify is the full check, without the cache. A refusal of a well-formed JWS carries the
// token's facts for the log.
func (v *Verifier) verify(ctx context.Context, raw string, now time.Time) (Principal, error) {
	tok, err := parseJWS(raw)
	if err != nil {
		return Principal{}, err
	}
	p, err := v.verifyParsed(ctx, tok, now)
	if err != nil && errors.Is(err, ErrInvalidToken) {
		return Principal{}, v.withFacts(tok, err)
	}
	return p, err
}

func (v *Verifier) verifyParsed(ctx context.Context, tok *parsedJWS, now time.Time) (Principal, error) {
	pk, err := v.keys.Key(ctx, tok.kid)
	if err != nil {
		// Not verdicts on the token: this request's context ended, or the issuer's keys
		// were never loaded.
		if errors.Is(err, ErrInvalidToken) || errors.Is(err, ErrKeysUnavailable) || ctx.Err() != nil {
			return Principal{}, err
		}
		return Principal{}, unknownKeyError(tok.kid, err)
	}
	if err := tok.verifySignature(pk); err != nil {
		return Principal{}, err
	}
	return v.checkClaims(tok.payload, now)
}

// tokenBufs hold a token's bytes while tokenKey hashes them.
var tokenBufs = sync.Pool{New: func() any { b := make([]byte, 0, 2048); return &b }}

// tokenKey is the cache's key for raw: its SHA-256, so that the cache holds no token. Hashed
// from a pooled buffer: converting raw to []byte would copy it to the heap on every request.
func tokenKey(raw string) [sha256.Size]byte {
	bp := tokenBufs.Get().(*[]byte)
	buf := append((*bp)[:0], raw...)
	key := sha256.Sum256(buf)
	clear(buf) // the pool is shared: no token's bytes wait in it
	*bp = buf[:0]
	tokenBufs.Put(bp)
	return key
}
