package devissuer

import (
	"net/url"
	"slices"
	"strings"
	"time"
)

// tokenExchange implements the RFC 8693 token-exchange grant: a token this issuer minted is
// exchanged for one with the same subject, aimed at one of Options.ExchangeAudiences, naming
// the client as actor (act.sub) and azp. It never outlives the subject token.
func (i *Issuer) tokenExchange(c Client, form url.Values) (tokenResponse, *tokenError) {
	raw := form.Get("subject_token")
	if raw == "" {
		return tokenResponse{}, refusal("invalid_request", "subject_token is required")
	}
	switch form.Get("subject_token_type") {
	case tokenTypeAccessToken, tokenTypeJWT:
	case "":
		return tokenResponse{}, refusal("invalid_request", "subject_token_type is required")
	default:
		return tokenResponse{}, refusal("invalid_request", "subject_token_type must be "+tokenTypeAccessToken)
	}
	if rt := form.Get("requested_token_type"); rt != "" && rt != tokenTypeAccessToken {
		return tokenResponse{}, refusal("invalid_request", "requested_token_type must be "+tokenTypeAccessToken)
	}
	if form.Has("actor_token") {
		return tokenResponse{}, refusal("invalid_request", "actor_token is not supported; the authenticated client is the actor")
	}
	target := form.Get("audience")
	if res := form.Get("resource"); res != "" {
		if target != "" && res != target {
			return tokenResponse{}, refusal("invalid_target", "audience and resource disagree")
		}
		target = res
	}
	if target == "" {
		return tokenResponse{}, refusal("invalid_request", "audience is required")
	}
	if !slices.Contains(i.opts.ExchangeAudiences, target) {
		return tokenResponse{}, refusal("invalid_target", "tokens for this audience are not issued by exchange")
	}
	sub, err := i.verifyOwn(raw)
	if err != nil {
		return tokenResponse{}, refusal("invalid_grant", "subject_token is invalid or expired")
	}
	scopes, terr := grantScopes(form.Get("scope"), strings.Fields(sub.Scope))
	if terr != nil {
		return tokenResponse{}, terr
	}
	ttl := tokenTTL
	if left := time.Until(time.Unix(sub.Expiry, 0)); left < ttl {
		ttl = left.Truncate(time.Second)
	}
	if ttl <= 0 {
		return tokenResponse{}, refusal("invalid_grant", "subject_token is invalid or expired")
	}
	resp, terr := i.issue(accessClaims{
		Subject:           sub.Subject,
		PreferredUsername: sub.PreferredUsername,
		Audience:          target,
		Scope:             joinScopes(scopes),
		AuthorizedParty:   c.ID,
		ClientID:          c.ID,
		Actor:             &actor{Subject: c.ID, Actor: sub.Actor},
	}, ttl)
	resp.IssuedTokenType = tokenTypeAccessToken
	return resp, terr
}
