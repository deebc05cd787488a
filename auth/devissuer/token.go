package devissuer

import (
	"crypto/subtle"
	"mime"
	"net/http"
	"net/url"
	"slices"
	"strings"
)

const maxTokenRequestBytes = 64 << 10

// tokenResponse is the RFC 6749 §5.1 success body (plus RFC 8693's issued_token_type).
// scope is omitted when empty: the TypeScript MCP SDK rejects "scope": null.
type tokenResponse struct {
	AccessToken     string `json:"access_token"`
	IssuedTokenType string `json:"issued_token_type,omitempty"`
	TokenType       string `json:"token_type"`
	ExpiresIn       int64  `json:"expires_in"`
	Scope           string `json:"scope,omitempty"`
}

// serveToken is the token endpoint. It turns the request into a form, authenticates the
// client and hands both to the grant; the grants decide, this only writes the answer.
func (i *Issuer) serveToken(w http.ResponseWriter, r *http.Request) {
	form, err := tokenForm(w, r)
	grant := form.Get("grant_type")
	var client Client
	if err == nil {
		client, err = i.authenticate(r, form)
	}
	var resp tokenResponse
	if err == nil {
		switch grant {
		case grantClientCredentials:
			resp, err = i.clientCredentials(client, form)
		case grantTokenExchange:
			resp, err = i.tokenExchange(client, form)
		case "":
			err = refusal("invalid_request", "grant_type is required")
		default:
			err = refusal("unsupported_grant_type", "supported: client_credentials, "+grantTokenExchange)
		}
	}
	if err != nil {
		i.log.Info("devissuer: token refused", "grant", grant, "client", client.ID, "error", err.Code, "description", err.Description)
		writeTokenError(w, err)
		return
	}
	i.log.Info("devissuer: token issued", "grant", grant, "client", client.ID, "scope", resp.Scope)
	writeJSON(w, http.StatusOK, resp)
}

// tokenForm reads the application/x-www-form-urlencoded body. Parameters in the URL
// query are ignored: credentials and tokens belong in the body. A parameter sent twice
// is refused (RFC 6749 §3.2).
func tokenForm(w http.ResponseWriter, r *http.Request) (url.Values, *tokenError) {
	mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
	if err != nil || mt != "application/x-www-form-urlencoded" {
		return nil, refusal("invalid_request", "Content-Type must be application/x-www-form-urlencoded")
	}
	r.Body = http.MaxBytesReader(w, r.Body, maxTokenRequestBytes)
	if err := r.ParseForm(); err != nil {
		return nil, refusal("invalid_request", "malformed or oversized request body")
	}
	for k, v := range r.PostForm {
		if len(v) > 1 {
			if k == "resource" || k == "audience" {
				return nil, refusal("invalid_target", "only one "+k+" is supported")
			}
			return nil, refusal("invalid_request", "parameter "+k+" is repeated")
		}
	}
	return r.PostForm, nil
}

// authenticate identifies the client by client_secret_basic or client_secret_post,
// exactly one of them (RFC 6749 §2.3.1). Every failure is invalid_client with 401 and
// the same description, so a caller cannot tell an unknown id from a wrong secret.
func (i *Issuer) authenticate(r *http.Request, form url.Values) (Client, *tokenError) {
	id, secret, basic := r.BasicAuth()
	if basic {
		if form.Has("client_secret") || (form.Has("client_id") && form.Get("client_id") != unescape(id)) {
			return Client{}, refusal("invalid_request", "use one client authentication method, not two")
		}
		// RFC 6749 §2.3.1: id and secret are form-encoded before Basic encoding.
		id, secret = unescape(id), unescape(secret)
	} else {
		id, secret = form.Get("client_id"), form.Get("client_secret")
		if id == "" || secret == "" {
			return Client{}, refusal("invalid_client", "client authentication required (client_secret_basic or client_secret_post)")
		}
	}
	c, ok := i.clients[id]
	// Compare even for an unknown id so both cases take similar time.
	want := c.Secret
	if !ok {
		want = "\x00unknown client"
	}
	if subtle.ConstantTimeCompare([]byte(secret), []byte(want)) != 1 || !ok {
		return Client{}, refusal("invalid_client", "client authentication failed")
	}
	return c, nil
}

func unescape(s string) string {
	if u, err := url.QueryUnescape(s); err == nil {
		return u
	}
	return s
}

// grantScopes returns the scopes to issue: all of allowed when nothing was requested,
// else the requested scopes that are allowed, in request order.
func grantScopes(requested string, allowed []string) ([]string, *tokenError) {
	req := strings.Fields(requested)
	if len(req) == 0 {
		return slices.Clone(allowed), nil
	}
	var out []string
	for _, s := range req {
		if slices.Contains(allowed, s) && !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	if len(out) == 0 {
		return nil, refusal("invalid_scope", "none of the requested scopes may be granted to this client")
	}
	return out, nil
}

func joinScopes(s []string) string { return strings.Join(s, " ") }
