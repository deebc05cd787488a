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

// notAccessToken are the values of Keycloak's "typ" claim for tokens it signs with the same
// keys that are not access tokens ("Bearer"): with an audience of this resource (a client
// named so, or an audience mapper) one of them would otherwise pass for an access token.
var notAccessToken = map[string]bool{"ID": true, "Refresh": true, "Offline": true, "Logout": true}

// checkClaims validates the claims of a token whose signature is verified and builds its
// principal: no exp, no sub or no user claim means no principal.
func (v *Verifier) checkClaims(payload []byte, now time.Time) (Principal, error) {
	cs, err := parseClaimSet(payload)
	if err != nil {
		return Principal{}, err
	}
	iss, err := v.checkIssuer(cs)
	if err != nil {
		return Principal{}, err
	}
	if _, err := v.checkAudience(cs); err != nil {
		return Principal{}, err
	}
	if typ, _, err := cs.str(claimType); err == nil && notAccessToken[typ] {
		return Principal{}, claimError(claimType, "names a "+typ+" token, not an access token")
	}
	if cs.has(claimConfirmation) {
		// A sender-constrained token (DPoP, RFC 9449; mTLS, RFC 8705) is good only with a proof
		// of its key, which gemgate does not check: a stolen one would work here.
		return Principal{}, claimError(claimConfirmation, "binds the token to a key gemgate cannot check the proof of (DPoP or mTLS)")
	}
	var exp time.Time
	for _, name := range timeClaims {
		at, _, err := checkTime(cs, name, now)
		if err != nil {
			return Principal{}, err
		}
		if name == claimExpiry {
			exp = at
		}
	}
	sub, err := subject(cs)
	if err != nil {
		return Principal{}, err
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
		claims:  cs,
	}, nil
}

// checkIssuer returns iss, and an error unless it is the configured issuer.
func (v *Verifier) checkIssuer(cs claimSet) (string, error) {
	iss, _, err := cs.str(claimIssuer)
	if err == nil && iss != v.cfg.Issuer {
		err = issuerError(iss, v.cfg.Issuer)
	}
	return iss, err
}

// checkAudience returns aud, and an error unless it names an accepted audience.
func (v *Verifier) checkAudience(cs claimSet) ([]string, error) {
	aud, err := cs.strings(claimAudience, false)
	if err == nil && !slices.ContainsFunc(aud, func(a string) bool { return slices.Contains(v.cfg.Audiences, a) }) {
		azp, _, _ := cs.str(claimAuthorizedParty)
		err = audienceError(aud, v.cfg.Audiences, azp)
	}
	return aud, err
}

// timeClaims are the time claims checkClaims and Explain check, one checkTime each, in this order.
var timeClaims = []string{claimExpiry, claimNotBefore, claimIssuedAt}

// checkTime reads the time claim name and checks it against now with DefaultClockSkew: exp
// is required and must not have passed, nbf and iat must not be ahead.
func checkTime(cs claimSet, name string, now time.Time) (at time.Time, present bool, err error) {
	const skew = DefaultClockSkew
	at, present, err = cs.numericDate(name)
	switch {
	case err != nil:
	case name != claimExpiry:
		if present && now.Add(skew).Before(at) {
			err = notYetValidError(name, at, now)
		}
	case !present:
		err = claimError(claimExpiry, "is missing")
	case !now.Before(at.Add(skew)):
		err = expiredError(at, now)
	}
	return at, present, err
}

// subject reads sub, which must be a string, not empty, without a NUL: every worker is told
// it in its environment (GEMGATE_SUBJECT), which cannot hold one, so its start would fail at
// every retry.
func subject(cs claimSet) (string, error) {
	sub, _, err := cs.str(claimSubject)
	switch {
	case err != nil:
	case sub == "":
		err = claimError(claimSubject, "is missing or empty")
	case strings.ContainsRune(sub, 0):
		err = claimError(claimSubject, "holds a NUL character")
	}
	return sub, err
}

func requiredString(cs claimSet, name string) (string, error) {
	s, ok, err := cs.str(name)
	switch {
	case err != nil:
		return "", err
	case !ok:
		return "", claimError(name, "is missing")
	case s == "":
		return "", claimError(name, "is empty")
	}
	return s, nil
}

// tokenScopes reads `scope` (a string) and `scp` (an array of strings, or a string); a token
// carrying both grants their union. A string splits at SP (%x20) alone, as RFC 6749 §3.3
// does: strings.Fields would make "tenant:x<NBSP>mcp:write", one scope to the issuer, grant
// mcp:write here. A value that is not an RFC 6749 scope-token (NQCHARs: no white space) is
// left out: no scope gemgate checks can be one (policy's scopes are scope-tokens), and the
// worker is told the scopes joined at spaces (GEMGATE_SCOPES), where a worker splitting at
// white space would find mcp:write in it.
func tokenScopes(cs claimSet) ([]string, error) {
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
		return nil, claimError("scp", "is not an array of strings")
	}
	var scopes []string
	for _, x := range append(all, scp...) {
		if validScopeToken(x) && !slices.Contains(scopes, x) {
			scopes = append(scopes, x)
		}
	}
	return scopes, nil
}
