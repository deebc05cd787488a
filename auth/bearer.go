package auth

import (
	"net/http"
	"net/url"
	"strings"
)

// requestError is a refused way of presenting a token, which the client is told as it is.
func requestError(msg string) error {
	return &refusalError{kind: ErrInvalidRequest, reason: ReasonRequest, text: "auth: " + msg, desc: msg}
}

var (
	errTokenInQuery = requestError("access token in the query string is not accepted")
	errTwoHeaders   = requestError("more than one Authorization header")
	errEmptyToken   = requestError("empty bearer token")
	errBearerTab    = requestError("the Bearer scheme and its token must be separated by spaces, not a tab (RFC 7235)")
	// Another scheme is no bearer token (RFC 6750 §3.1).
	errNotBearer = &refusalError{kind: ErrNoToken, reason: ReasonMissing,
		text: "auth: authorization scheme is not Bearer", desc: "bearer token required"}
)

// BearerToken returns the token of the request's single "Authorization: Bearer <token>"
// header. It returns [ErrNoToken] when there is none, an error wrapping ErrNoToken for
// another scheme, an error wrapping [ErrInvalidRequest] for an access_token query parameter
// (RFC 6750 §2.3, which MCP forbids, even next to a header), two Authorization headers or an
// empty token, and an error wrapping [ErrInvalidToken] for a token not in RFC 6750 token syntax.
func BearerToken(r *http.Request) (string, error) {
	// Most requests have no query string: there is nothing to parse then.
	if r.URL != nil && r.URL.RawQuery != "" && queryHasToken(r.URL.RawQuery) {
		return "", errTokenInQuery
	}
	values := r.Header.Values("Authorization")
	switch len(values) {
	case 0:
		return "", ErrNoToken
	case 1:
	default:
		return "", errTwoHeaders
	}
	// Read as a load balancer in front reads it (HAProxy's http_auth_bearer, which scale-out
	// routes on): the scheme, one or more spaces, the token. A tab after the scheme or a
	// NO-BREAK SPACE after the token is no separator to such a reader, so none here either.
	v := strings.Trim(values[0], " \t")
	scheme, rest, _ := strings.Cut(v, " ")
	if !strings.EqualFold(scheme, "Bearer") {
		if len(scheme) > 6 && scheme[6] == '\t' && strings.EqualFold(scheme[:6], "Bearer") {
			return "", errBearerTab
		}
		return "", errNotBearer
	}
	token := strings.TrimLeft(rest, " ")
	if token == "" {
		return "", errEmptyToken
	}
	if !IsBearerToken(token) {
		// A malformed token, as RFC 6750 §3.1 files it under invalid_token.
		return "", malformedError("not in RFC 6750 token syntax")
	}
	return token, nil
}

// IsBearerToken reports whether s is in RFC 6750 §2.1 token syntax with nothing around it:
// 1*( ALPHA / DIGIT / "-" / "." / "_" / "~" / "+" / "/" ) *"=". Anything else goes no
// further: not to the verifier, not to a log.
func IsBearerToken(s string) bool {
	body := strings.TrimRight(s, "=")
	return body != "" && !strings.ContainsFunc(body, func(r rune) bool {
		return !('a' <= r && r <= 'z' || 'A' <= r && r <= 'Z' || '0' <= r && r <= '9' ||
			strings.ContainsRune("-._~+/", r))
	})
}

// queryHasToken reports whether a raw query names access_token, in any case, as a key of a
// pair split at '&' or ';'. url.Query drops a pair with a ';' in it, and a server or proxy
// that splits at ';' as well would read a token from it.
func queryHasToken(raw string) bool {
	for pair := range strings.FieldsFuncSeq(raw, func(c rune) bool { return c == '&' || c == ';' }) {
		key, _, _ := strings.Cut(pair, "=")
		if k, err := url.QueryUnescape(key); err == nil {
			key = k
		}
		if strings.EqualFold(key, "access_token") {
			return true
		}
	}
	return false
}
