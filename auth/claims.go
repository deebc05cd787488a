package auth

import (
	"context"
	"slices"
	"strings"
	"time"

	"github.com/lestrrat-go/jwx/v2/jwt"
)

// checkClaims validates the claims of a token whose signature is verified
// and builds its principal. Refuse by default: no exp, no sub or no user
// claim means no principal.
func (v *Verifier) checkClaims(ctx context.Context, payload []byte, now time.Time) (Principal, error) {
	tok, err := jwt.ParseInsecure(payload)
	if err != nil {
		return Principal{}, &MalformedTokenError{Reason: "unparsable claims"}
	}
	if tok.Issuer() != v.cfg.Issuer {
		return Principal{}, &InvalidIssuerError{Issuer: tok.Issuer()}
	}
	if !audienceMatches(tok.Audience(), v.cfg.Audiences) {
		return Principal{}, &InvalidAudienceError{Audience: tok.Audience()}
	}
	if err := checkTimes(tok, now, v.cfg.ClockSkew); err != nil {
		return Principal{}, err
	}
	sub := tok.Subject()
	if sub == "" {
		return Principal{}, &ClaimError{Claim: jwt.SubjectKey, Reason: "is missing or empty"}
	}
	user, err := stringClaim(tok, v.cfg.UserClaim)
	if err != nil {
		return Principal{}, err
	}
	scopes, err := tokenScopes(tok)
	if err != nil {
		return Principal{}, err
	}
	claims, err := tok.AsMap(ctx)
	if err != nil {
		return Principal{}, &MalformedTokenError{Reason: "unreadable claims"}
	}
	return Principal{
		Issuer:  tok.Issuer(),
		Subject: sub,
		User:    user,
		Scopes:  scopes,
		Expiry:  tok.Expiration(),
		Claims:  claims,
	}, nil
}

func audienceMatches(aud, accepted []string) bool {
	for _, a := range aud {
		if slices.Contains(accepted, a) {
			return true
		}
	}
	return false
}

// checkTimes requires exp and checks exp, nbf and iat against now with skew.
func checkTimes(tok jwt.Token, now time.Time, skew time.Duration) error {
	if _, ok := tok.Get(jwt.ExpirationKey); !ok {
		return &ClaimError{Claim: jwt.ExpirationKey, Reason: "is missing"}
	}
	if exp := tok.Expiration(); !now.Before(exp.Add(skew)) {
		return &TokenExpiredError{Expiry: exp}
	}
	if _, ok := tok.Get(jwt.NotBeforeKey); ok {
		if nbf := tok.NotBefore(); now.Add(skew).Before(nbf) {
			return &NotYetValidError{Claim: jwt.NotBeforeKey, At: nbf}
		}
	}
	if _, ok := tok.Get(jwt.IssuedAtKey); ok {
		if iat := tok.IssuedAt(); now.Add(skew).Before(iat) {
			return &NotYetValidError{Claim: jwt.IssuedAtKey, At: iat}
		}
	}
	return nil
}

func stringClaim(tok jwt.Token, name string) (string, error) {
	v, ok := tok.Get(name)
	if !ok {
		return "", &ClaimError{Claim: name, Reason: "is missing"}
	}
	s, ok := v.(string)
	if !ok {
		return "", &ClaimError{Claim: name, Reason: "is not a string"}
	}
	if s == "" {
		return "", &ClaimError{Claim: name, Reason: "is empty"}
	}
	return s, nil
}

// tokenScopes reads `scope` (space-separated string) and `scp` (array of
// strings, or a string); a token carrying both grants their union.
func tokenScopes(tok jwt.Token) ([]string, error) {
	var scopes []string
	add := func(s ...string) {
		for _, x := range s {
			if x != "" && !slices.Contains(scopes, x) {
				scopes = append(scopes, x)
			}
		}
	}
	if v, ok := tok.Get("scope"); ok {
		s, ok := v.(string)
		if !ok {
			return nil, &ClaimError{Claim: "scope", Reason: "is not a string"}
		}
		add(strings.Fields(s)...)
	}
	if v, ok := tok.Get("scp"); ok {
		switch s := v.(type) {
		case string:
			add(strings.Fields(s)...)
		case []string:
			add(s...)
		case []any:
			for _, x := range s {
				str, ok := x.(string)
				if !ok {
					return nil, &ClaimError{Claim: "scp", Reason: "is not an array of strings"}
				}
				add(str)
			}
		default:
			return nil, &ClaimError{Claim: "scp", Reason: "is not an array of strings"}
		}
	}
	return scopes, nil
}
