package auth

import (
	"context"
	"maps"
	"slices"
	"time"
)

// Principal is the verified caller of a request.
type Principal struct {
	Issuer, Subject, User string // User is the value of the configured user claim
	Scopes                []string
	Expiry                time.Time      // zero when not from a token (auth none)
	Claims                map[string]any // verified claims, for policy rules; never logged
}

// HasScope reports whether the principal was granted scope s.
func (p Principal) HasScope(s string) bool {
	return slices.Contains(p.Scopes, s)
}

// clone returns a copy whose slices and map the caller may change without
// affecting cached principals.
func (p Principal) clone() Principal {
	p.Scopes = slices.Clone(p.Scopes)
	if p.Claims != nil {
		p.Claims = maps.Clone(p.Claims)
	}
	return p
}

type principalKey struct{}

// verified is what a request's context carries: the principal, and the bearer token it was
// verified from when the Authenticator's middleware put it there. One value, so that the
// token costs no context layer (nor allocation) of its own.
type verified struct {
	p     Principal
	token string
}

// WithPrincipal returns a context carrying p.
func WithPrincipal(ctx context.Context, p Principal) context.Context {
	return context.WithValue(ctx, principalKey{}, verified{p: p})
}

func withVerified(ctx context.Context, p Principal, token string) context.Context {
	return context.WithValue(ctx, principalKey{}, verified{p: p, token: token})
}

// PrincipalFrom returns the principal stored by [WithPrincipal] or the middleware.
func PrincipalFrom(ctx context.Context) (Principal, bool) {
	v, ok := ctx.Value(principalKey{}).(verified)
	return v.p, ok
}

// TokenFrom returns the bearer token the [Authenticator]'s middleware verified for this
// request: what [BearerToken] returned for it, without reading the header again. It reports
// false when no token was verified (a context from [WithPrincipal] or [Anonymous]).
func TokenFrom(ctx context.Context) (string, bool) {
	v, _ := ctx.Value(principalKey{}).(verified)
	return v.token, v.token != ""
}
