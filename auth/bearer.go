package auth

import (
	"net/http"
	"strings"
)

// requestError is a refused way of presenting a token. It wraps
// [ErrInvalidRequest], or [ErrNoToken] for a non-Bearer scheme.
type requestError struct {
	msg  string
	kind error
}

func (e *requestError) Error() string { return "auth: " + e.msg }
func (e *requestError) Unwrap() error { return e.kind }

var (
	errTokenInQuery = &requestError{"access token in the query string is not accepted", ErrInvalidRequest}
	errTwoHeaders   = &requestError{"more than one Authorization header", ErrInvalidRequest}
	errEmptyToken   = &requestError{"empty bearer token", ErrInvalidRequest}
	errNotBearer    = &requestError{"authorization scheme is not Bearer", ErrNoToken}
)

// BearerToken returns the token of the request's single
// "Authorization: Bearer <token>" header. It returns [ErrNoToken] when there
// is no Authorization header, an error wrapping ErrNoToken for another
// scheme (Basic, ...), and an error wrapping [ErrInvalidRequest] for an
// access_token query parameter (refused even next to a header: RFC 6750
// §2.3 is never accepted, MCP forbids it), two Authorization headers or an
// empty token.
func BearerToken(r *http.Request) (string, error) {
	if r.URL != nil && r.URL.Query().Has("access_token") {
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
	v := strings.TrimSpace(values[0])
	scheme, rest := v, ""
	if i := strings.IndexAny(v, " \t"); i >= 0 {
		scheme, rest = v[:i], v[i+1:]
	}
	if !strings.EqualFold(scheme, "Bearer") {
		return "", errNotBearer
	}
	token := strings.TrimSpace(rest)
	if token == "" {
		return "", errEmptyToken
	}
	return token, nil
}
