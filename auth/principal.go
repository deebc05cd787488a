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

// WithPrincipal returns a context carrying p.
func WithPrincipal(ctx context.Context, p Principal) context.Context {
	return context.WithValue(ctx, principalKey{}, p)
}

// PrincipalFrom returns the principal stored by [WithPrincipal].
func PrincipalFrom(ctx context.Context) (Principal, bool) {
	p, ok := ctx.Value(principalKey{}).(Principal)
	return p, ok
}
