package devissuer

import (
	"net/http"
	"slices"
)

// Grant types and token types this issuer knows.
const (
	grantClientCredentials = "client_credentials"
	grantTokenExchange     = "urn:ietf:params:oauth:grant-type:token-exchange"
	tokenTypeAccessToken   = "urn:ietf:params:oauth:token-type:access_token"
	tokenTypeJWT           = "urn:ietf:params:oauth:token-type:jwt"
)

// serverMetadata is the document served both as RFC 8414 authorization server metadata
// and as OIDC Discovery; the issuer has no path, so one document fits both.
type serverMetadata struct {
	Issuer                            string   `json:"issuer"`
	AuthorizationEndpoint             string   `json:"authorization_endpoint"`
	TokenEndpoint                     string   `json:"token_endpoint"`
	JWKSURI                           string   `json:"jwks_uri"`
	ScopesSupported                   []string `json:"scopes_supported,omitempty"`
	ResponseTypesSupported            []string `json:"response_types_supported"`
	GrantTypesSupported               []string `json:"grant_types_supported"`
	TokenEndpointAuthMethodsSupported []string `json:"token_endpoint_auth_methods_supported"`
	CodeChallengeMethodsSupported     []string `json:"code_challenge_methods_supported"`
	SubjectTypesSupported             []string `json:"subject_types_supported"`
	IDTokenSigningAlgValuesSupported  []string `json:"id_token_signing_alg_values_supported"`
}

func (i *Issuer) metadata() serverMetadata {
	var scopes []string
	for _, c := range i.opts.Clients {
		scopes = append(scopes, c.Scopes...)
	}
	slices.Sort(scopes)
	return serverMetadata{
		Issuer:                            i.url,
		AuthorizationEndpoint:             i.url + "/authorize",
		TokenEndpoint:                     i.url + "/token",
		JWKSURI:                           i.url + "/jwks",
		ScopesSupported:                   slices.Compact(scopes),
		ResponseTypesSupported:            []string{"code"},
		GrantTypesSupported:               []string{grantClientCredentials, grantTokenExchange},
		TokenEndpointAuthMethodsSupported: []string{"client_secret_basic", "client_secret_post"},
		CodeChallengeMethodsSupported:     []string{"S256"},
		SubjectTypesSupported:             []string{"public"},
		IDTokenSigningAlgValuesSupported:  []string{"RS256"},
	}
}

func (i *Issuer) routes() http.Handler {
	mux := http.NewServeMux()
	meta := publicDocument(func(w http.ResponseWriter, _ *http.Request) {
		writeJSON(w, http.StatusOK, i.metadata())
	})
	mux.Handle("/.well-known/openid-configuration", meta)
	mux.Handle("/.well-known/oauth-authorization-server", meta)
	mux.Handle("/jwks", publicDocument(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Cache-Control", "no-store")
		_, _ = w.Write(i.key.jwks)
	}))
	mux.HandleFunc("POST /token", i.serveToken)
	mux.HandleFunc("/authorize", serveAuthorize)
	return mux
}

// publicDocument serves a public, credential-free JSON document to any origin, so that
// browser-based MCP clients (which send an MCP-Protocol-Version header and therefore a
// CORS preflight) can read it. Only GET, HEAD and OPTIONS are allowed.
func publicDocument(get http.HandlerFunc) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Access-Control-Allow-Origin", "*")
		switch r.Method {
		case http.MethodGet, http.MethodHead:
			get(w, r)
		case http.MethodOptions:
			w.Header().Set("Access-Control-Allow-Methods", "GET, OPTIONS")
			w.Header().Set("Access-Control-Allow-Headers", "*")
			w.WriteHeader(http.StatusNoContent)
		default:
			w.Header().Set("Allow", "GET, HEAD, OPTIONS")
			http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		}
	})
}

// serveAuthorize answers the advertised but unimplemented authorization endpoint. There
// are no registered redirect URIs, so per RFC 6749 §4.1.2.1 the error is shown to the
// user instead of being redirected.
func serveAuthorize(w http.ResponseWriter, _ *http.Request) {
	http.Error(w, "gemgate development issuer: the authorization endpoint is not implemented; "+
		"use the client_credentials grant with the client ids and secrets printed by `gemgate dev`",
		http.StatusBadRequest)
}
