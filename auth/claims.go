package auth

import (
	"slices"
	"strings"
	"time"
)

// Registered claim names read by the verifier.
const (
	claimIssuer          = "iss"
	claimAudience        = "aud"
	claimSubject         = "sub"
	claimExpiry          = "exp"
	claimNotBefore       = "nbf"
	claimIssuedAt        = "iat"
	claimAuthorizedParty = "azp"
	claimType            = "typ"
	claimConfirmation    = "cnf"
)

// checkClaims validates the claims of a token whose signature is verified and builds its
// principal: no exp, no sub or no user claim means no principal.
func (v *Verifier) checkClaims(payload []byte, now time.Time) (Principal, error) {
	cs, err := parseClaimSet(payload)
	if err != nil {
		return Principal{}, err
	}
	return v.principal(cs, now)
}

// notAccessToken are the values of Keycloak's "typ" claim for tokens it signs with the same
// keys that are not access tokens ("Bearer"): with an audience of this resource (a client
// named so, or an audience mapper) one of them would otherwise pass for an access token.
var notAccessToken = map[string]bool{"ID": true, "Refresh": true, "Offline": true, "Logout": true}

func (v *Verifier) principal(cs *claimSet, now time.Time) (Principal, error) {
	iss, _, err := cs.str(claimIssuer)
	if err != nil {
		return Principal{}, err
	}
	if iss != v.cfg.Issuer {
		return Principal{}, &InvalidIssuerError{Issuer: iss, Expected: v.cfg.Issuer}
	}
	aud, err := cs.strings(claimAudience, false)
	if err != nil {
		return Principal{}, err
	}
	if !audienceMatches(aud, v.cfg.Audiences) {
		azp, _, _ := cs.str(claimAuthorizedParty)
		return Principal{}, &InvalidAudienceError{Audience: aud, Expected: slices.Clone(v.cfg.Audiences), AuthorizedParty: azp}
	}
	if typ, _, err := cs.str(claimType); err == nil && notAccessToken[typ] {
		return Principal{}, &ClaimError{Claim: claimType, Reason: "names a " + typ + " token, not an access token"}
	}
	if cs.has(claimConfirmation) {
		// A sender-constrained token (DPoP, RFC 9449; mTLS, RFC 8705) is good only with a proof
		// of its key, which gemgate does not check: a stolen one would work here.
		return Principal{}, &ClaimError{Claim: claimConfirmation, Reason: "binds the token to a key gemgate cannot check the proof of (DPoP or mTLS)"}
	}
	exp, err := checkTimes(cs, now)
	if err != nil {
		return Principal{}, err
	}
	sub, _, err := cs.str(claimSubject)
	if err != nil {
		return Principal{}, err
	}
	if sub == "" {
		return Principal{}, &ClaimError{Claim: claimSubject, Reason: "is missing or empty"}
	}
	user, err := requiredString(cs, v.cfg.UserClaim)
	if err != nil {
		return Principal{}, err
	}
	scopes, err := tokenScopes(cs)
	if err != nil {
		return Principal{}, err
	}
	return Principal{
		Issuer:  iss,
		Subject: sub,
		User:    user,
		Scopes:  scopes,
		Expiry:  exp,
		claims:  cs.values,
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

// checkTimes requires exp and checks exp, nbf and iat against now with DefaultClockSkew. It
// returns exp.
func checkTimes(cs *claimSet, now time.Time) (time.Time, error) {
	const skew = DefaultClockSkew
	exp, ok, err := cs.numericDate(claimExpiry)
	if err != nil {
		return time.Time{}, err
	}
	if !ok {
		return time.Time{}, &ClaimError{Claim: claimExpiry, Reason: "is missing"}
	}
	if !now.Before(exp.Add(skew)) {
		return time.Time{}, &TokenExpiredError{Expiry: exp, Now: now, Skew: skew}
	}
	for _, name := range []string{claimNotBefore, claimIssuedAt} {
		at, ok, err := cs.numericDate(name)
		if err != nil {
			return time.Time{}, err
		}
		if ok && now.Add(skew).Before(at) {
			return time.Time{}, &NotYetValidError{Claim: name, At: at, Now: now, Skew: skew}
		}
	}
	return exp, nil
}

func requiredString(cs *claimSet, name string) (string, error) {
	s, ok, err := cs.str(name)
	switch {
	case err != nil:
		return "", err
	case !ok:
		return "", &ClaimError{Claim: name, Reason: "is missing"}
	case s == "":
		return "", &ClaimError{Claim: name, Reason: "is empty"}
	}
	return s, nil
}

// tokenScopes reads `scope` (a string) and `scp` (an array of strings, or a string); a token
// carrying both grants their union. A string splits at SP (%x20) alone, as RFC 6749 §3.3
// does: strings.Fields would make "tenant:x<NBSP>mcp:write", one scope to the issuer, grant
// mcp:write here.
func tokenScopes(cs *claimSet) ([]string, error) {
	var all []string
	if cs.has("scope") {
		s, _, err := cs.str("scope")
		if err != nil {
			return nil, err
		}
		all = strings.Split(s, " ")
	}
	scp, err := cs.strings("scp", true)
	if err != nil {
		return nil, &ClaimError{Claim: "scp", Reason: "is not an array of strings"}
	}
	var scopes []string
	for _, x := range append(all, scp...) {
		if x != "" && !slices.Contains(scopes, x) {
			scopes = append(scopes, x)
		}
	}
	return scopes, nil
}
