package auth

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/netip"
	"net/url"
	"strings"

	"github.com/coreos/go-oidc/v3/oidc"
)

// discover reads the issuer's OpenID configuration. go-oidc also checks that the document
// names exactly this issuer.
func discover(ctx context.Context, client *http.Client, issuer string) (*oidc.Provider, error) {
	ctx, cancel := context.WithTimeout(ctx, fetchTimeout)
	defer cancel()
	provider, err := oidc.NewProvider(oidc.ClientContext(ctx, client), issuer)
	if err != nil {
		return nil, fmt.Errorf("auth: discovery for issuer %q: %w", issuer, err)
	}
	return provider, nil
}

// discoverJWKSURL reads jwks_uri from the issuer's OpenID configuration; it must pass
// SecureURL, as a configured jwks_url must.
func discoverJWKSURL(ctx context.Context, client *http.Client, issuer string, allowInsecure bool) (string, error) {
	provider, err := discover(ctx, client, issuer)
	if err != nil {
		return "", err
	}
	var doc struct {
		JWKSURI string `json:"jwks_uri"`
	}
	if err := provider.Claims(&doc); err != nil {
		return "", fmt.Errorf("auth: discovery for issuer %q: %w", issuer, err)
	}
	if doc.JWKSURI == "" {
		return "", fmt.Errorf("auth: discovery for issuer %q: %w", issuer, errors.New("no jwks_uri"))
	}
	if !TrustedURL(issuer, doc.JWKSURI, allowInsecure) {
		return "", fmt.Errorf("auth: discovery for issuer %q: jwks_uri %q is not https (http only on loopback or with allow_insecure_http), or names this host for an issuer elsewhere; fix the issuer's public URL (Keycloak: KC_HOSTNAME, or its proxy headers), or set jwks_url", issuer, doc.JWKSURI)
	}
	return doc.JWKSURI, nil
}

// TokenEndpoint reads the issuer's token endpoint from its OpenID configuration (for a token
// exchange, which sends it a client secret and the caller's token); it must pass SecureURL. A
// nil client means http.DefaultClient.
func TokenEndpoint(ctx context.Context, client *http.Client, issuer string, allowInsecure bool) (string, error) {
	provider, err := discover(ctx, GuardRedirects(client, issuer, allowInsecure), issuer)
	if err != nil {
		return "", err
	}
	if u := provider.Endpoint().TokenURL; u != "" {
		if !TrustedURL(issuer, u, allowInsecure) {
			return "", fmt.Errorf("auth: discovery for issuer %q: token_endpoint %q is not https (http only on loopback or with allow_insecure_http), or names this host for an issuer elsewhere; fix the issuer's public URL, or set exchange_token_url", issuer, u)
		}
		return u, nil
	}
	return "", fmt.Errorf("auth: discovery for issuer %q: %w", issuer, errors.New("no token_endpoint"))
}

// SecureURL reports whether raw is an absolute https URL, or an http one whose host is
// loopback (localhost or a loopback IP) or allowed by allowInsecure: the rule for every URL
// gemgate takes keys from or sends secrets to, configured or discovered.
func SecureURL(raw string, allowInsecure bool) bool {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" {
		return false
	}
	return u.Scheme == "https" || (u.Scheme == "http" && (IsLoopbackHost(u.Hostname()) || allowInsecure))
}

// IsLoopbackHost reports whether host (no port, no brackets) is localhost or a loopback IP.
func IsLoopbackHost(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip, err := netip.ParseAddr(host)
	return err == nil && ip.IsLoopback()
}

// TrustedURL is SecureURL for a URL gemgate did not configure but was handed, by an issuer's
// discovery document or a redirect: it must also not be on loopback unless the issuer is.
// A remote issuer that names this host names whatever a local user listens on there.
func TrustedURL(issuer, raw string, allowInsecure bool) bool {
	if !SecureURL(raw, allowInsecure) {
		return false
	}
	u, _ := url.Parse(raw)
	iss, err := url.Parse(issuer)
	return !IsLoopbackHost(u.Hostname()) || (err == nil && IsLoopbackHost(iss.Hostname()))
}

// GuardRedirects returns a copy of c (nil: http.DefaultClient) that follows a redirect only to
// a URL TrustedURL allows for issuer: a redirect must not take keys, a client secret or a
// caller's token to plain HTTP, or to this host, that the URL first asked would not have.
func GuardRedirects(c *http.Client, issuer string, allowInsecure bool) *http.Client {
	if c == nil {
		c = http.DefaultClient
	}
	g := *c
	next := c.CheckRedirect
	g.CheckRedirect = func(req *http.Request, via []*http.Request) error {
		if !TrustedURL(issuer, req.URL.String(), allowInsecure) {
			return fmt.Errorf("auth: refused a redirect to %s: not https (http only on loopback or with allow_insecure_http), or this host for an issuer elsewhere", req.URL.Redacted())
		}
		if next != nil {
			return next(req, via)
		}
		if len(via) >= 10 {
			return errors.New("auth: stopped after 10 redirects")
		}
		return nil
	}
	return &g
}
