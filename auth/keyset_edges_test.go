package auth

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lestrrat-go/jwx/v2/jwk"
)

// fakeIdP is an identity provider inside an http.RoundTripper: no sockets, so it also
// works inside a testing/synctest bubble. While down, every request fails.
type fakeIdP struct {
	issuer      string
	up          atomic.Bool
	jwks        atomic.Pointer[[]byte]
	discoveries atomic.Int32
	fetches     atomic.Int32
}

func newFakeIdP(t *testing.T, keys ...signingKey) *fakeIdP {
	t.Helper()
	f := &fakeIdP{issuer: "https://idp.test"}
	f.up.Store(true)
	f.publishJWKS(t, keys...)
	return f
}

func (f *fakeIdP) publishJWKS(t *testing.T, keys ...signingKey) {
	t.Helper()
	set := jwk.NewSet()
	for _, k := range keys {
		j, err := jwk.FromRaw(k.public())
		if err != nil {
			t.Fatal(err)
		}
		_ = j.Set(jwk.KeyIDKey, k.kid) // no "use": absent means any use, signing included
		_ = set.AddKey(j)
	}
	b, err := json.Marshal(set)
	if err != nil {
		t.Fatal(err)
	}
	f.setJWKS(b)
}

func (f *fakeIdP) setJWKS(b []byte) { f.jwks.Store(&b) }

func (f *fakeIdP) client() *http.Client { return &http.Client{Transport: f} }

func (f *fakeIdP) RoundTrip(r *http.Request) (*http.Response, error) {
	if !f.up.Load() {
		return nil, errors.New("connection refused")
	}
	var body []byte
	switch r.URL.Path {
	case "/.well-known/openid-configuration":
		f.discoveries.Add(1)
		body, _ = json.Marshal(map[string]string{"issuer": f.issuer, "jwks_uri": f.issuer + "/jwks"})
	case "/jwks":
		f.fetches.Add(1)
		body = *f.jwks.Load()
	default:
		return &http.Response{StatusCode: 404, Status: "404 Not Found", Body: http.NoBody, Request: r}, nil
	}
	return &http.Response{
		StatusCode: 200, Status: "200 OK", Request: r,
		Header:        http.Header{"Content-Type": {"application/json"}},
		Body:          io.NopCloser(bytes.NewReader(body)),
		ContentLength: int64(len(body)),
	}, nil
}

// records is a slog.Handler keeping every record, for tests that read what was logged.
type records struct {
	mu   sync.Mutex
	recs []slog.Record
}

func (h *records) Enabled(context.Context, slog.Level) bool { return true }
func (h *records) Handle(_ context.Context, r slog.Record) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.recs = append(h.recs, r.Clone())
	return nil
}
func (h *records) WithAttrs([]slog.Attr) slog.Handler { return h }
func (h *records) WithGroup(string) slog.Handler      { return h }

// find returns the records with message msg.
func (h *records) find(msg string) []slog.Record {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []slog.Record
	for _, r := range h.recs {
		if r.Message == msg {
			out = append(out, r)
		}
	}
	return out
}

func attr(r slog.Record, key string) slog.Value {
	var v slog.Value
	r.Attrs(func(a slog.Attr) bool {
		if a.Key == key {
			v = a.Value
			return false
		}
		return true
	})
	return v
}

func fakeIdPKeySet(f *fakeIdP, logger *slog.Logger, now func() time.Time) *remoteKeySet {
	cfg := Config{Issuer: f.issuer, Audiences: []string{testResource}, HTTPClient: f.client(), Logger: logger}
	return newRemoteKeySet(cfg.withDefaults(), now)
}

// TestKeySetRemembersTheJWKSURL: discovery runs once; later refreshes go straight to the
// JWKS it named.
func TestKeySetRemembersTheJWKSURL(t *testing.T) {
	f := newFakeIdP(t, keyring().rsa1)
	clock := newFakeClock()
	s := fakeIdPKeySet(f, nil, clock.Now)
	for range 3 {
		if err := s.refresh(t.Context(), 0); err != nil {
			t.Fatal(err)
		}
		clock.advance(time.Minute)
	}
	if d, j := f.discoveries.Load(), f.fetches.Load(); d != 1 || j != 3 {
		t.Errorf("discoveries = %d, JWKS fetches = %d; want 1 and 3", d, j)
	}
}

// TestKeySetLogsTheFirstLoadOnly: the first key set loaded is logged at info, so an
// operator sees the keys arrive; the routine refreshes after it only at debug.
func TestKeySetLogsTheFirstLoadOnly(t *testing.T) {
	f := newFakeIdP(t, keyring().rsa1)
	h := &records{}
	s := fakeIdPKeySet(f, slog.New(h), newFakeClock().Now)
	for range 3 {
		if err := s.refresh(t.Context(), 0); err != nil {
			t.Fatal(err)
		}
	}
	var levels []slog.Level
	for _, r := range h.find("auth: signing keys loaded") {
		levels = append(levels, r.Level)
	}
	if len(levels) != 3 || levels[0] != slog.LevelInfo || levels[1] != slog.LevelDebug || levels[2] != slog.LevelDebug {
		t.Errorf("levels of the load lines = %v, want [INFO DEBUG DEBUG]", levels)
	}
}

// TestKeySetAcceptsKeysWithoutUse: a JWK without "use" may sign (RFC 7517 §4.2 makes the
// member optional); only one marked for another use is skipped.
func TestKeySetAcceptsKeysWithoutUse(t *testing.T) {
	kr := keyring()
	f := newFakeIdP(t, kr.rsa1, kr.ec256)
	s := fakeIdPKeySet(f, nil, newFakeClock().Now)
	if err := s.refresh(t.Context(), 0); err != nil {
		t.Fatalf("a JWKS of keys without use: %v", err)
	}
	for _, kid := range []string{"k1", "ec"} {
		if _, err := s.Key(t.Context(), kid); err != nil {
			t.Errorf("Key(%s): %v", kid, err)
		}
	}
}

// TestJWKSSizeLimit: a JWKS of exactly 1 MiB is read; one byte more is refused, and the
// refusal says why rather than failing to parse a truncated document.
func TestJWKSSizeLimit(t *testing.T) {
	f := newFakeIdP(t, keyring().rsa1)
	doc := *f.jwks.Load()
	pad := func(n int) []byte { // the document, then whitespace up to n bytes
		return append(bytes.Clone(doc), bytes.Repeat([]byte(" "), n-len(doc))...)
	}
	s := fakeIdPKeySet(f, nil, newFakeClock().Now)
	url := f.issuer + "/jwks"

	f.setJWKS(pad(maxJWKSBytes))
	if _, err := s.fetch(t.Context(), url); err != nil {
		t.Errorf("a JWKS of exactly %d bytes: %v", maxJWKSBytes, err)
	}
	f.setJWKS(pad(maxJWKSBytes + 1))
	if _, err := s.fetch(t.Context(), url); err == nil || !strings.Contains(err.Error(), "larger than 1 MiB") {
		t.Errorf("a JWKS of %d bytes: %v, want the size refusal", maxJWKSBytes+1, err)
	}
}

// TestKeysUsedUpToMaxAge: a key set is used without a fetch up to and including keyMaxAge
// after it was fetched; past that the next lookup refreshes it (TestStaleKeysAreRefreshed).
func TestKeysUsedUpToMaxAge(t *testing.T) {
	kr := keyring()
	iss := newTestIssuer(t, kr.rsa1)
	clock := newFakeClock()
	v := newTestVerifier(t, iss, clock, func(c *Config) { c.CacheSize = -1 })
	iss.publish(t, kr.rsa2) // withdrawn at the issuer, but not yet noticed
	clock.advance(keyMaxAge)
	if _, err := v.Verify(t.Context(), token(t, kr.rsa1, iss.claims(clock.Now(), nil), nil)); err != nil {
		t.Fatalf("key set exactly keyMaxAge old: %v", err)
	}
	if got := iss.fetches.Load(); got != 1 {
		t.Errorf("fetches = %d, want 1: a set keyMaxAge old is still fresh", got)
	}
}

// TestHealthWhileAFetchOutlivesTheProbe: when the probe's context ends while a fetch is
// still on the network, Health answers with the last finished fetch (here: it worked), not
// with the probe's own deadline.
func TestHealthWhileAFetchOutlivesTheProbe(t *testing.T) {
	kr := keyring()
	jwks := newSlowJWKS(t, kr.rsa1)
	iss := newTestIssuer(t, kr.rsa1)
	clock := newFakeClock()
	v := newTestVerifier(t, iss, clock, func(c *Config) {
		c.JWKSURL = jwks.srv.URL
		c.HTTPClient = jwks.srv.Client()
	})
	jwks.holdNext.Store(true)
	clock.advance(healthInterval)
	ctx, cancel := context.WithTimeout(t.Context(), 200*time.Millisecond)
	defer cancel()
	if err := v.Health(ctx); err != nil {
		t.Errorf("Health with the last fetch good and the next one slow = %v, want nil", err)
	}
	select {
	case <-jwks.entered:
	case <-time.After(10 * time.Second):
		t.Error("Health did not start a fetch")
	}
}
