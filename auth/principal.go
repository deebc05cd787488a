package auth

import (
	"context"
	"slices"
	"time"
)

// Principal is the verified caller of a request.
type Principal struct {
	Issuer, Subject, User string // User is the value of the configured user claim
	Scopes                []string
	Expiry                time.Time // zero when not from a token (auth none)
	// claims are the token's verified claims; never logged. Unexported, so that copies of a
	// cached principal can share them and no holder can change them.
	claims map[string]any
}

// Claims returns every verified claim, for the policy's rules; nil when p is not from a
// token. A number is an int64 (a uint64 past its range) when the issuer wrote an integer,
// else a float64. The map and the objects and arrays in it are shared: read them, do not
// change them, never log them.
func (p Principal) Claims() map[string]any { return p.claims }

// Audience returns the token's aud claim, nil when p is not from a token.
func (p Principal) Audience() []string {
	aud, _ := claimSet(p.claims).strings(claimAudience, false)
	return aud
}

// HasScope reports whether the principal was granted scope s.
func (p Principal) HasScope(s string) bool {
	return slices.Contains(p.Scopes, s)
}

// clone returns a copy whose scopes the caller may change without affecting cached
// principals (the claims no one can change).
func (p Principal) clone() Principal {
	p.Scopes = slices.Clone(p.Scopes)
	return p
}

type principalKey struct{}

// verified is what a request's context carries: the principal, and the bearer token it was
// verified from (by the Authenticator's middleware).
type verified struct {
	p     Principal
	token string
}

// WithPrincipal returns a context carrying p.
func WithPrincipal(ctx context.Context, p Principal) context.Context {
	return withVerified(ctx, p, "")
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
// request, or false (a context from [WithPrincipal] or [Anonymous]).
func TokenFrom(ctx context.Context) (string, bool) {
	v, _ := ctx.Value(principalKey{}).(verified)
	return v.token, v.token != ""
}

// AcceptedUntil is when a verifier with gemgate's clock skew (not configurable) stops
// accepting p's token: its exp plus DefaultClockSkew; zero when p is not from a token. A
// stream the token opened ends then.
func AcceptedUntil(p Principal) time.Time {
	if p.Expiry.IsZero() {
		return time.Time{}
	}
	return p.Expiry.Add(DefaultClockSkew)
}
