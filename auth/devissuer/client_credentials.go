package devissuer

import "net/url"

// clientCredentials implements the client_credentials grant (RFC 6749 §4.4): the client
// gets a token for its own User with the intersection of requested and allowed scopes.
// An RFC 8707 resource, if sent, must be the issuer's Audience.
func (i *Issuer) clientCredentials(c Client, form url.Values) (tokenResponse, *tokenError) {
	if form.Has("resource") && form.Get("resource") != i.opts.Audience {
		return tokenResponse{}, errInvalidTarget("resource is not served by this issuer")
	}
	scopes, terr := grantScopes(form.Get("scope"), c.Scopes)
	if terr != nil {
		return tokenResponse{}, terr
	}
	scope := joinScopes(scopes)
	tok, err := i.sign(accessClaims{
		Subject:           c.User,
		PreferredUsername: c.User,
		Audience:          i.opts.Audience,
		Scope:             scope,
		AuthorizedParty:   c.ID,
		ClientID:          c.ID,
	}, i.opts.TokenTTL)
	if err != nil {
		i.log.Error("devissuer: sign", "err", err)
		return tokenResponse{}, &tokenError{Status: 500, Code: "server_error"}
	}
	return tokenResponse{
		AccessToken: tok,
		TokenType:   "Bearer",
		ExpiresIn:   seconds(i.opts.TokenTTL),
		Scope:       scope,
	}, nil
}
