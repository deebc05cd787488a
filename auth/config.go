package auth

import (
	"cmp"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"time"
)

// DefaultClockSkew is how far exp, nbf and iat may be off gemgate's clock.
const DefaultClockSkew = 30 * time.Second

// Defaults for zero [Config] fields.
const (
	DefaultUserClaim          = "sub"
	DefaultKeyRefreshInterval = time.Minute
	DefaultCacheSize          = 10000
)

// Config describes the issuer whose tokens a [Verifier] accepts.
// Zero fields take the documented defaults; NewVerifier copies it.
type Config struct {
	Issuer             string        // required; must equal `iss` exactly
	JWKSURL            string        // optional; otherwise jwks_uri from OIDC discovery
	Audiences          []string      // required; accepted `aud` values, Audiences[0] is the resource
	UserClaim          string        // default "sub"
	KeyRefreshInterval time.Duration // min gap between JWKS fetches; default 1m
	CacheSize          int           // verified-token cache entries; default 10000; <0 disables
	HTTPClient         *http.Client  // nil = http.DefaultClient
	AllowInsecureHTTP  bool          // see SecureURL
	Logger             *slog.Logger  // nil = discard
	OnKeyRefresh       func(err error)
}

func (c Config) withDefaults() Config {
	c.UserClaim = cmp.Or(c.UserClaim, DefaultUserClaim)
	c.KeyRefreshInterval = cmp.Or(c.KeyRefreshInterval, DefaultKeyRefreshInterval)
	c.CacheSize = cmp.Or(c.CacheSize, DefaultCacheSize)
	c.HTTPClient = GuardRedirects(c.HTTPClient, c.Issuer, c.AllowInsecureHTTP)
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	c.Audiences = append([]string(nil), c.Audiences...)
	return c
}

// validate reports every problem at once.
func (c Config) validate() error {
	var errs []error
	if c.Issuer == "" {
		errs = append(errs, errors.New("issuer is required"))
	}
	if len(c.Audiences) == 0 {
		errs = append(errs, errors.New("at least one audience is required"))
	}
	for i, a := range c.Audiences {
		if a == "" {
			errs = append(errs, fmt.Errorf("audience %d is empty", i))
		}
	}
	if c.KeyRefreshInterval < 0 {
		errs = append(errs, errors.New("key refresh interval must not be negative"))
	}
	if len(errs) == 0 {
		return nil
	}
	return fmt.Errorf("auth: invalid config: %w", errors.Join(errs...))
}
