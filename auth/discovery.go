package auth

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/netip"
	"net/url"

	"github.com/coreos/go-oidc/v3/oidc"

	"github.com/gemgate/gemgate/internal/clip"
)

const (
	// maxDiscoveryErrorText bounds what of a failed discovery's error is kept: go-oidc's own
	// words and the start of the issuer's answer.
	maxDiscoveryErrorText = 300
	maxDiscoveryBytes     = 1 << 20 // the issuer's OpenID configuration
)

// discover reads the issuer's OpenID configuration, which go-oidc checks names exactly this
// issuer. go-oidc reads the document whole: past maxDiscoveryBytes the read fails.
func discover(ctx context.Context, client *http.Client, issuer string) (*oidc.Provider, error) {
	ctx, cancel := context.WithTimeout(ctx, fetchTimeout)
	defer cancel()
	provider, err := oidc.NewProvider(oidc.ClientContext(ctx, boundedBodies(client, maxDiscoveryBytes)), issuer)
	if err != nil {
		// go-oidc quotes the body of a refused answer whole, on every retry's log line: the
		// issuer's words are clipped; a context error stays one.
		if ctxErr := ctx.Err(); ctxErr != nil {
			return nil, fmt.Errorf("auth: discovery for issuer %q: %w", issuer, ctxErr)
		}
		return nil, &discoveryError{fmt.Sprintf("auth: discovery for issuer %q: %s", issuer, clip.String(err.Error(), maxDiscoveryErrorText)), err}
	}
	return provider, nil
}

// discoveryError is a failed discovery's clipped text, with go-oidc's error behind it.
type discoveryError struct {
	text string
	err  error
}

func (e *discoveryError) Error() string { return e.text }
func (e *discoveryError) Unwrap() error { return e.err }

// IssuerNamedOtherwise is the issuer named by the discovery document err is about, when it
// names another issuer than the one configured (localhost for 127.0.0.1, a trailing slash):
// the setting's fix, which waiting for the issuer will not bring. ok is false for any other
// error, and for a name too long to be one.
func IssuerNamedOtherwise(err error) (named string, ok bool) {
	var m *oidc.IssuerMismatchError
	if !errors.As(err, &m) || len(m.Discovered) > maxDiscoveryErrorText {
		return "", false
	}
	return m.Discovered, true
}

// discoverJWKSURL reads jwks_uri from the issuer's OpenID configuration.
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
	return discovered(issuer, "jwks_uri", doc.JWKSURI, allowInsecure,
		"fix the issuer's public URL (Keycloak: KC_HOSTNAME, or its proxy headers), or set jwks_url")
}

// TokenEndpoint reads the issuer's token endpoint from its OpenID configuration (for a token
// exchange, which sends it a client secret and the caller's token). A nil client means
// http.DefaultClient.
func TokenEndpoint(ctx context.Context, client *http.Client, issuer string, allowInsecure bool) (string, error) {
	provider, err := discover(ctx, GuardRedirects(client, issuer, allowInsecure), issuer)
	if err != nil {
		return "", err
	}
	return discovered(issuer, "token_endpoint", provider.Endpoint().TokenURL, allowInsecure,
		"fix the issuer's public URL, or set exchange_token_url")
}

// discovered is the URL u that discovery named as field, if it is there and passes
// TrustedURL; the error's advice ends with fix.
func discovered(issuer, field, u string, allowInsecure bool, fix string) (string, error) {
	switch {
	case u == "":
		return "", fmt.Errorf("auth: discovery for issuer %q: no %s", issuer, field)
	case !TrustedURL(issuer, u, allowInsecure):
		return "", fmt.Errorf("auth: discovery for issuer %q: %s %q is not https (http only on loopback or with allow_insecure_http), or names this host for an issuer elsewhere; %s", issuer, field, clip.String(u, maxDiscoveryErrorText), fix)
	}
	return u, nil
}

// SecureURL reports whether raw is an absolute https URL, or an http one whose host is
// loopback or allowed by allowInsecure: the rule for every URL gemgate takes keys from or
// sends secrets to.
func SecureURL(raw string, allowInsecure bool) bool {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" {
		return false
	}
	return u.Scheme == "https" || (u.Scheme == "http" && (IsLoopbackHost(u.Hostname()) || allowInsecure))
}

// TrustedURL is SecureURL for a URL gemgate did not configure but was handed, by an issuer's
// discovery document or a redirect: it must also not be on this host (loopback, or an
// unspecified address, which a connection reaches this host by) unless the issuer is. A
// remote issuer that names this host names whatever a local user listens on there.
func TrustedURL(issuer, raw string, allowInsecure bool) bool {
	if !SecureURL(raw, allowInsecure) {
		return false
	}
	u, _ := url.Parse(raw)
	iss, err := url.Parse(issuer)
	return !namesThisHost(u.Hostname()) || (err == nil && namesThisHost(iss.Hostname()))
}

// namesThisHost reports whether a connection to host (no port, no brackets) reaches this
// host: a loopback host, or 0.0.0.0 or ::, to which the kernel connects as to loopback.
func namesThisHost(host string) bool {
	ip, err := netip.ParseAddr(host)
	return IsLoopbackHost(host) || (err == nil && ip.Unmap().IsUnspecified())
}

// GuardRedirects returns a copy of c (nil: http.DefaultClient) that follows a redirect only to
// a URL TrustedURL allows for issuer, so that no redirect takes keys, a client secret or a
// caller's token where the URL first asked would not.
func GuardRedirects(c *http.Client, issuer string, allowInsecure bool) *http.Client {
	if c == nil {
		c = http.DefaultClient
	}
	g := *c
	next := c.CheckRedirect
	g.CheckRedirect = func(req *http.Request, via []*http.Request) error {
		if !TrustedURL(issuer, req.URL.String(), allowInsecure) {
			return fmt.Errorf("auth: refused a redirect to %s: not https (http only on loopback or with allow_insecure_http), or this host for an issuer elsewhere", clip.String(req.URL.Redacted(), maxDiscoveryErrorText))
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

// boundedBodies returns a copy of c whose response bodies fail to read past max bytes.
func boundedBodies(c *http.Client, max int64) *http.Client {
	b := *c
	next := c.Transport
	if next == nil {
		next = http.DefaultTransport
	}
	b.Transport = boundedTransport{next: next, max: max}
	return &b
}

type boundedTransport struct {
	next http.RoundTripper
	max  int64
}

func (t boundedTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := t.next.RoundTrip(req)
	if err == nil {
		resp.Body = &boundedBody{ReadCloser: resp.Body, left: t.max}
	}
	return resp, err
}

var errBodyTooLarge = errors.New("auth: the issuer's answer is larger than 1 MiB")

type boundedBody struct {
	io.ReadCloser
	left int64
}

func (b *boundedBody) Read(p []byte) (int, error) {
	if b.left <= 0 {
		// One byte more tells an answer of exactly the bound from a longer one.
		var one [1]byte
		n, err := b.ReadCloser.Read(one[:])
		if n > 0 {
			return 0, errBodyTooLarge
		}
		return 0, err
	}
	if int64(len(p)) > b.left {
		p = p[:b.left]
	}
	n, err := b.ReadCloser.Read(p)
	b.left -= int64(n)
	return n, err
}
