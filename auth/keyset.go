package auth

import (
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/rsa"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/lestrrat-go/jwx/v2/jwk"
)

// KeySet finds the issuer's public signing key named by a token.
type KeySet interface {
	// Key returns the key with id kid. kid is "" when the token names none;
	// a key set may then answer with its only key. Any error is reported
	// to the client as an unknown key.
	Key(ctx context.Context, kid string) (PublicKey, error)
}

// PublicKey is one signing key of the issuer.
type PublicKey struct {
	Key       crypto.PublicKey // *rsa.PublicKey, *ecdsa.PublicKey or ed25519.PublicKey
	Algorithm string           // the JWK's "alg"; "" means any accepted algorithm that fits the key
}

// errNoSuchKey is returned when a kid is not in the (possibly refreshed) set.
var errNoSuchKey = errors.New("no such key in the issuer's key set")

const (
	maxJWKSBytes = 1 << 20
	// keyMaxAge: a key set this old is refreshed by the next lookup that
	// can take the fetch lock, so keys the issuer withdrew stop verifying.
	keyMaxAge    = time.Hour
	fetchTimeout = 10 * time.Second
	// healthInterval: how often a health check may fetch the keys to see the issuer is there.
	healthInterval = 5 * time.Second
	minRSABits     = 2048
)

// keyTable is an immutable snapshot of the issuer's keys.
type keyTable struct {
	byID    map[string]PublicKey
	fetched time.Time
}

func (t *keyTable) lookup(kid string) (PublicKey, bool) {
	if t == nil {
		return PublicKey{}, false
	}
	if kid == "" && len(t.byID) == 1 {
		for _, k := range t.byID {
			return k, true
		}
	}
	k, ok := t.byID[kid]
	return k, ok
}

// remoteKeySet serves keys from a JWKS URL. Lookups read an atomic snapshot;
// fetches are serialised by mu, and an unknown kid triggers at most one fetch
// per interval however many requests ask at once.
type remoteKeySet struct {
	url       string
	client    *http.Client
	interval  time.Duration
	logger    *slog.Logger
	onRefresh func(error)
	now       func() time.Time

	keys atomic.Pointer[keyTable]

	mu          sync.Mutex
	lastAttempt time.Time // guarded by mu; zero before the first fetch
	lastErr     error     // guarded by mu; the error of the last fetch, nil when it worked

	// onWithdraw is called after a refresh that dropped a key the previous set had, so
	// that tokens verified with it stop being accepted from the cache.
	onWithdraw func()
}

func (s *remoteKeySet) Key(ctx context.Context, kid string) (PublicKey, error) {
	t := s.keys.Load()
	if k, ok := t.lookup(kid); ok {
		if s.now().Sub(t.fetched) > keyMaxAge && s.mu.TryLock() {
			// Refreshing a stale set is best effort: on failure the key in hand
			// stays usable; a new set without it withdraws it.
			if s.now().Sub(s.lastAttempt) >= s.interval {
				_ = s.refreshLocked(ctx)
			}
			s.mu.Unlock()
			if k2, ok := s.keys.Load().lookup(kid); ok {
				return k2, nil
			}
			return PublicKey{}, errNoSuchKey
		}
		return k, nil
	}

	s.mu.Lock()
	defer s.mu.Unlock()
	// Another request may have fetched while this one waited.
	if k, ok := s.keys.Load().lookup(kid); ok {
		return k, nil
	}
	if !s.lastAttempt.IsZero() && s.now().Sub(s.lastAttempt) < s.interval {
		return PublicKey{}, errNoSuchKey
	}
	if err := s.refreshLocked(ctx); err != nil {
		return PublicKey{}, err
	}
	if k, ok := s.keys.Load().lookup(kid); ok {
		return k, nil
	}
	return PublicKey{}, errNoSuchKey
}

// Ready reports whether keys are loaded, trying a (rate-limited) fetch if not.
func (s *remoteKeySet) Ready(ctx context.Context) error {
	if t := s.keys.Load(); t != nil && len(t.byID) > 0 {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if t := s.keys.Load(); t != nil && len(t.byID) > 0 {
		return nil
	}
	if !s.lastAttempt.IsZero() && s.now().Sub(s.lastAttempt) < s.interval {
		return errors.New("auth: no signing keys loaded")
	}
	return s.refreshLocked(ctx)
}

// Health reports whether the issuer's keys can be fetched now: nil when the last fetch
// worked. When that fetch is older than healthInterval it fetches again first (so a
// readiness probe notices an issuer that went away within seconds), unless another fetch is
// under way. Cached keys stay in use either way.
func (s *remoteKeySet) Health(ctx context.Context) error {
	if !s.mu.TryLock() {
		return nil // a fetch is under way; its outcome is the next answer
	}
	defer s.mu.Unlock()
	if s.now().Sub(s.lastAttempt) >= min(s.interval, healthInterval) {
		_ = s.refreshLocked(ctx)
	}
	return s.lastErr
}

// refreshLocked fetches the JWKS; on failure the previous keys stay in use.
// The caller holds s.mu.
func (s *remoteKeySet) refreshLocked(ctx context.Context) error {
	s.lastAttempt = s.now()
	// The fetch serves every waiting request, so the caller's cancellation
	// must not cut it short.
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), fetchTimeout)
	defer cancel()
	table, err := s.fetch(ctx)
	if s.onRefresh != nil {
		s.onRefresh(err)
	}
	s.lastErr = err
	if err != nil {
		s.logger.Warn("auth: fetching signing keys failed", slog.String("jwks_url", s.url), slog.Any("error", err))
		return err
	}
	table.fetched = s.now()
	old := s.keys.Swap(table)
	if old != nil && s.onWithdraw != nil {
		for kid := range old.byID {
			if _, kept := table.byID[kid]; !kept {
				s.onWithdraw()
				break
			}
		}
	}
	s.logger.Debug("auth: signing keys loaded", slog.String("jwks_url", s.url), slog.Int("keys", len(table.byID)))
	return nil
}

func (s *remoteKeySet) fetch(ctx context.Context) (*keyTable, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, s.url, nil)
	if err != nil {
		return nil, fmt.Errorf("auth: jwks request: %w", err)
	}
	req.Header.Set("Accept", "application/json, application/jwk-set+json")
	resp, err := s.client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("auth: fetching jwks: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("auth: fetching jwks: status %s", resp.Status)
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxJWKSBytes+1))
	if err != nil {
		return nil, fmt.Errorf("auth: reading jwks: %w", err)
	}
	if len(body) > maxJWKSBytes {
		return nil, errors.New("auth: jwks larger than 1 MiB")
	}
	return parseJWKS(body, s.logger)
}

// parseJWKS keeps the usable signature keys of a JWKS document: public
// RSA (>= 2048 bits), EC and Ed25519 keys not marked for encryption.
func parseJWKS(body []byte, logger *slog.Logger) (*keyTable, error) {
	set, err := jwk.Parse(body)
	if err != nil {
		return nil, fmt.Errorf("auth: parsing jwks: %w", err)
	}
	t := &keyTable{byID: make(map[string]PublicKey, set.Len())}
	for i := range set.Len() {
		k, _ := set.Key(i)
		if use := k.KeyUsage(); use != "" && use != string(jwk.ForSignature) {
			continue
		}
		pub, err := k.PublicKey()
		if err != nil {
			continue
		}
		var raw any
		if err := pub.Raw(&raw); err != nil {
			continue
		}
		key, ok := usableKey(raw)
		if !ok {
			logger.Debug("auth: skipping unusable jwks key", slog.String("kid", k.KeyID()), slog.String("kty", k.KeyType().String()))
			continue
		}
		if _, dup := t.byID[k.KeyID()]; dup {
			continue
		}
		var alg string
		if a := k.Algorithm(); a != nil {
			alg = a.String()
		}
		t.byID[k.KeyID()] = PublicKey{Key: key, Algorithm: alg}
	}
	if len(t.byID) == 0 {
		return nil, errors.New("auth: jwks holds no usable signing key")
	}
	return t, nil
}

func usableKey(raw any) (crypto.PublicKey, bool) {
	switch k := raw.(type) {
	case *rsa.PublicKey:
		return k, k.N.BitLen() >= minRSABits
	case rsa.PublicKey:
		return &k, k.N.BitLen() >= minRSABits
	case *ecdsa.PublicKey:
		return k, true
	case ecdsa.PublicKey:
		return &k, true
	case ed25519.PublicKey:
		return k, true
	}
	return nil, false
}
