package devissuer

import (
	"net/url"
	"time"
)

// clientCredentials implements the client_credentials grant (RFC 6749 §4.4): the client
// gets a token for its own User with the intersection of requested and allowed scopes.
// An RFC 8707 resource, if sent, must be the issuer's Audience.
func (i *Issuer) clientCredentials(c Client, form url.Values) (tokenResponse, *tokenError) {
	if form.Has("resource") && form.Get("resource") != i.opts.Audience {
		return tokenResponse{}, refusal("invalid_target", "resource is not served by this issuer")
	}
	scopes, terr := grantScopes(form.Get("scope"), c.Scopes)
	if terr != nil {
		return tokenResponse{}, terr
	}
	claims := i.userClaims(c.User, scopes)
	claims.AuthorizedParty, claims.ClientID = c.ID, c.ID
	return i.issue(claims, tokenTTL)
}

// userClaims are the claims of a token for user, aimed at the issuer's Audience.
func (i *Issuer) userClaims(user string, scopes []string) accessClaims {
	return accessClaims{Subject: user, PreferredUsername: user, Audience: i.opts.Audience,
		Scope: joinScopes(scopes)}
}

// issue signs claims into a Bearer token that lasts ttl.
func (i *Issuer) issue(claims accessClaims, ttl time.Duration) (tokenResponse, *tokenError) {
	tok, err := i.sign(claims, ttl)
	if err != nil {
		i.log.Error("devissuer: sign", "err", err)
		return tokenResponse{}, &tokenError{Status: 500, Code: "server_error"}
	}
	return tokenResponse{AccessToken: tok, TokenType: "Bearer", ExpiresIn: int64(ttl / time.Second),
		Scope: claims.Scope}, nil
}
