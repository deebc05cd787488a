package auth

import (
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/rsa"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"math/rand/v2"
	"net/http"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gemgate/gemgate/internal/clip"
	"github.com/lestrrat-go/jwx/v2/jwk"
	"golang.org/x/sync/singleflight"
)

// PublicKey is one signing key of the issuer.
type PublicKey struct {
	Key       crypto.PublicKey // *rsa.PublicKey, *ecdsa.PublicKey or ed25519.PublicKey
	Algorithm string           // the JWK's "alg"; "" means any accepted algorithm that fits the key
}

// same reports whether k is the key o is: the same algorithm and the same public key.
func (k PublicKey) same(o PublicKey) bool {
	eq, ok := k.Key.(interface{ Equal(crypto.PublicKey) bool })
	return ok && eq.Equal(o.Key) && k.Algorithm == o.Algorithm
}

// errNoSuchKey is returned when a kid is not in the (possibly refreshed) set.
var errNoSuchKey = errors.New("no such key in the issuer's key set")

// errNoUsableKey: the issuer's key set, read whole, holds no key gemgate can verify with. Once
// keys were loaded, that set withdraws them all (withdrawAll), as a set without one key
// withdraws that one: not an issuer out of reach, whose last keys stay in use.
var errNoUsableKey = errors.New("auth: jwks holds no usable signing key")

const (
	maxJWKSBytes = 1 << 20
	// keyMaxAge: a key set this old is refreshed by the next lookup, so keys the issuer
	// withdrew stop verifying.
	keyMaxAge      = time.Hour
	fetchTimeout   = 10 * time.Second
	healthInterval = 5 * time.Second // how often a health check may fetch the keys
	minRSABits     = 2048
)

// keyTable is an immutable snapshot of the issuer's keys.
type keyTable struct {
	byID    map[string]PublicKey
	fetched time.Time
}

func (t *keyTable) lookup(kid string) (PublicKey, bool) {
	if kid == "" && len(t.byID) == 1 {
		for _, k := range t.byID {
			return k, true
		}
	}
	k, ok := t.byID[kid]
	return k, ok
}

// remoteKeySet serves keys from the issuer's JWKS. Lookups read an atomic snapshot; one
// fetch (singleflight) serves every request asking at once, each waiting only as long as its
// own context. Unknown kids cause a fetch at most once per cfg.KeyRefreshInterval.
type remoteKeySet struct {
	cfg Config

	keys     atomic.Pointer[keyTable]
	flight   singleflight.Group
	fetching atomic.Bool   // a fetch is on the network now
	wake     chan struct{} // nudges the background loader (cap 1)

	mu          sync.Mutex // guards the fields below; never held across network I/O
	url         string     // the JWKS URL; "" until discovery worked
	lastAttempt time.Time  // zero before the first fetch
	lastErr     error      // the error of the last fetch, nil when it worked

	// onWithdraw is called after a refresh that dropped or changed a key: the tokens it
	// verified must leave the cache.
	onWithdraw func()
}

func newRemoteKeySet(cfg Config) *remoteKeySet {
	return &remoteKeySet{cfg: cfg, url: cfg.JWKSURL, wake: make(chan struct{}, 1)}
}

// Key returns the key with id kid ("" when the token names none: the set may then answer with
// its only key).
func (s *remoteKeySet) Key(ctx context.Context, kid string) (PublicKey, error) {
	t := s.keys.Load()
	if t == nil {
		// Never loaded: the background loader retries; no request waits on the issuer. Not
		// Ready, which loads again: keys stored meanwhile would make it answer no key, no error.
		return PublicKey{}, s.unloaded()
	}
	k, known := t.lookup(kid)
	if known && (time.Since(t.fetched) <= keyMaxAge || s.fetching.Load()) {
		return k, nil
	}
	// An unknown kid, or a set past keyMaxAge. A known key stays usable when the refresh
	// fails or this request ends first.
	if err := s.refresh(ctx, s.cfg.KeyRefreshInterval); err != nil {
		if known {
			return k, nil
		}
		return PublicKey{}, err
	}
	if k, ok := s.keys.Load().lookup(kid); ok {
		return k, nil
	}
	return PublicKey{}, errNoSuchKey
}

// refresh fetches the JWKS unless the last attempt is younger than gap, joining a fetch
// under way. It waits only as long as ctx lets it; the fetch runs to its own timeout.
func (s *remoteKeySet) refresh(ctx context.Context, gap time.Duration) error {
	ch := s.flight.DoChan("jwks", func() (any, error) { return nil, s.fetchIfDue(gap) })
	select {
	case r := <-ch:
		return r.Err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// fetchIfDue runs inside the singleflight group. Not due, it returns the last fetch's error.
func (s *remoteKeySet) fetchIfDue(gap time.Duration) error {
	s.mu.Lock()
	if !s.lastAttempt.IsZero() && time.Since(s.lastAttempt) < gap {
		err := s.lastErr
		s.mu.Unlock()
		return err
	}
	s.lastAttempt = time.Now()
	url := s.url
	s.mu.Unlock()

	s.fetching.Store(true)
	defer s.fetching.Store(false)
	ctx, cancel := context.WithTimeout(context.Background(), 2*fetchTimeout)
	defer cancel()
	var err error
	if url == "" {
		if url, err = discoverJWKSURL(ctx, s.cfg.HTTPClient, s.cfg.Issuer, s.cfg.AllowInsecureHTTP); err == nil {
			s.mu.Lock()
			s.url = url
			s.mu.Unlock()
		}
	}
	var table *keyTable
	if err == nil {
		fctx, fcancel := context.WithTimeout(ctx, fetchTimeout)
		table, err = s.fetch(fctx, url)
		fcancel()
	}
	if s.cfg.OnKeyRefresh != nil {
		s.cfg.OnKeyRefresh(err)
	}
	s.mu.Lock()
	s.lastErr = err
	s.mu.Unlock()
	if err != nil {
		s.cfg.Logger.Warn("auth: fetching signing keys failed", slog.String("issuer", s.cfg.Issuer), slog.String("jwks_url", url), slog.Any("error", err))
		if errors.Is(err, errNoUsableKey) {
			s.withdrawAll()
		}
		return err
	}
	table.fetched = time.Now()
	old := s.keys.Swap(table)
	if old != nil && s.onWithdraw != nil && withdraws(old, table) {
		s.onWithdraw()
	}
	level := slog.LevelDebug
	if old == nil {
		level = slog.LevelInfo
	}
	s.cfg.Logger.Log(ctx, level, "auth: signing keys loaded", slog.String("issuer", s.cfg.Issuer), slog.String("jwks_url", url), slog.Int("keys", len(table.byID)))
	return nil
}

// withdrawAll empties a loaded key set, for an issuer that now publishes no usable key: every
// token is refused until it publishes one. A set never loaded stays so (Ready says not ready).
// Called inside the singleflight group, as every change of s.keys is.
func (s *remoteKeySet) withdrawAll() {
	if old := s.keys.Load(); old == nil || len(old.byID) == 0 {
		return
	}
	s.keys.Store(&keyTable{byID: map[string]PublicKey{}, fetched: time.Now()})
	if s.onWithdraw != nil {
		s.onWithdraw()
	}
}

// withdraws reports whether next drops or changes a key of prev: a key withdrawn, another key
// under its kid, or another answer to a token without kid (prev's only key, next's none).
func withdraws(prev, next *keyTable) bool {
	for kid, was := range prev.byID {
		if now, kept := next.byID[kid]; !kept || !now.same(was) {
			return true
		}
	}
	was, ok := prev.lookup("")
	now, kept := next.lookup("")
	return ok && (!kept || !now.same(was))
}

// fresh reports whether the loaded key set is at most keyMaxAge old at now: younger than
// that, a lookup of a key it holds fetches nothing.
func (s *remoteKeySet) fresh(now time.Time) bool {
	t := s.keys.Load()
	return t != nil && now.Sub(t.fetched) <= keyMaxAge
}

// keyIDs lists the loaded key ids, sorted, for the log of an unknown-kid refusal.
func (s *remoteKeySet) keyIDs() []string {
	t := s.keys.Load()
	if t == nil {
		return []string{}
	}
	return slices.Sorted(maps.Keys(t.byID))
}

// unloaded asks the background loader to try again soon and returns the error of a lookup
// before keys are loaded.
func (s *remoteKeySet) unloaded() error {
	select {
	case s.wake <- struct{}{}:
	default:
	}
	return keysUnavailableError(s.cfg.Issuer, s.lastError())
}

func (s *remoteKeySet) lastError() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.lastErr
}

// Backoff of the background loader while no key set has been loaded.
const (
	loadRetryMin = 500 * time.Millisecond
	loadRetryMax = 30 * time.Second
	// loadNudgeGap: a nudge (readiness probe, request) retries at once, at most this often.
	loadNudgeGap = time.Second
)

// load retries discovery and the JWKS with exponential backoff (and jitter) until a key
// set is loaded or ctx ends; the caller has made the first attempt.
func (s *remoteKeySet) load(ctx context.Context) {
	backoff := loadRetryMin
	for attempt := 2; ; attempt++ {
		last := time.Now()
		wait := backoff/2 + rand.N(backoff/2+1)
		s.cfg.Logger.Debug("auth: retrying signing keys", slog.String("issuer", s.cfg.Issuer), slog.Int("attempt", attempt), slog.Duration("in", wait))
		deadline := last.Add(wait)
		next := time.NewTimer(wait)
	waiting:
		for {
			select {
			case <-ctx.Done():
				next.Stop()
				return
			case <-next.C:
				break waiting
			case <-s.wake:
				if soon := last.Add(loadNudgeGap); soon.Before(deadline) {
					deadline = soon
					next.Reset(max(time.Until(soon), 0))
				}
			}
		}
		if ctx.Err() != nil { // select may take the timer over a cancel that came with it
			return
		}
		if err := s.refresh(ctx, 0); err == nil || ctx.Err() != nil {
			return
		}
		backoff = min(2*backoff, loadRetryMax)
	}
}

func (s *remoteKeySet) fetch(ctx context.Context, url string) (*keyTable, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, fmt.Errorf("auth: jwks request: %w", err)
	}
	req.Header.Set("Accept", "application/json, application/jwk-set+json")
	resp, err := s.cfg.HTTPClient.Do(req)
	if err != nil {
		// A refused redirect's error quotes where it led, which the issuer chose.
		return nil, fmt.Errorf("auth: fetching jwks: %s", clip.String(err.Error(), maxDiscoveryErrorText))
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("auth: fetching jwks: status %s", clip.String(resp.Status, maxDiscoveryErrorText))
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxJWKSBytes+1))
	if err != nil {
		return nil, fmt.Errorf("auth: reading jwks: %w", err)
	}
	if len(body) > maxJWKSBytes {
		return nil, errors.New("auth: jwks larger than 1 MiB")
	}
	return parseJWKS(body, s.cfg.Logger)
}

// parseJWKS keeps the usable signature keys of a JWKS document: public RSA (>= 2048 bits),
// EC and Ed25519 keys not marked for encryption. A key this build cannot read (a new "kty")
// is skipped and logged, as RFC 7517 §5 asks.
func parseJWKS(body []byte, logger *slog.Logger) (*keyTable, error) {
	var doc map[string]json.RawMessage // "keys" in its exact case, not as a struct field would match it
	var keys []json.RawMessage
	if err := json.Unmarshal(body, &doc); err != nil {
		return nil, fmt.Errorf("auth: parsing jwks: %w", err)
	}
	if err := json.Unmarshal(doc["keys"], &keys); err != nil || keys == nil {
		return nil, errors.New("auth: parsing jwks: no \"keys\" array")
	}
	t := &keyTable{byID: make(map[string]PublicKey, len(keys))}
	for _, rawKey := range keys {
		k, err := jwk.ParseKey(rawKey)
		if err != nil {
			var head struct{ Kid, Kty string }
			_ = json.Unmarshal(rawKey, &head)
			logger.Debug("auth: skipping jwks key this build cannot read", slog.String("kid", head.Kid), slog.String("kty", head.Kty), slog.Any("error", err))
			continue
		}
		if use := k.KeyUsage(); use != "" && use != string(jwk.ForSignature) {
			continue
		}
		raw, err := jwk.PublicRawKeyOf(k)
		key, ok := usableKey(raw)
		if err != nil || !ok {
			logger.Debug("auth: skipping unusable jwks key", slog.String("kid", k.KeyID()), slog.String("kty", k.KeyType().String()))
			continue
		}
		if _, dup := t.byID[k.KeyID()]; dup {
			continue
		}
		t.byID[k.KeyID()] = PublicKey{Key: key, Algorithm: k.Algorithm().String()}
	}
	if len(t.byID) == 0 {
		return nil, errNoUsableKey
	}
	return t, nil
}

func usableKey(raw any) (crypto.PublicKey, bool) {
	switch k := raw.(type) {
	case *rsa.PublicKey:
		return k, k.N.BitLen() >= minRSABits
	case *ecdsa.PublicKey, ed25519.PublicKey: // jwx's raw keys: pointers, but for Ed25519
		return k, true
	}
	return nil, false
}
