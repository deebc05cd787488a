package devissuer

import (
	"encoding/json"
	"net/http"
	"testing"

	"github.com/coreos/go-oidc/v3/oidc"
	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/oauthex"
)

func TestDiscoveryDocuments(t *testing.T) {
	i := startIssuer(t, Options{})
	want := serverMetadata{
		Issuer:                            i.URL(),
		AuthorizationEndpoint:             i.URL() + "/authorize",
		TokenEndpoint:                     i.URL() + "/token",
		JWKSURI:                           i.URL() + "/jwks",
		ScopesSupported:                   []string{"mcp:use", "mcp:write"},
		ResponseTypesSupported:            []string{"code"},
		GrantTypesSupported:               []string{"client_credentials", "urn:ietf:params:oauth:grant-type:token-exchange"},
		TokenEndpointAuthMethodsSupported: []string{"client_secret_basic", "client_secret_post"},
		CodeChallengeMethodsSupported:     []string{"S256"},
		SubjectTypesSupported:             []string{"public"},
		IDTokenSigningAlgValuesSupported:  []string{"RS256"},
	}
	for _, path := range []string{"/.well-known/openid-configuration", "/.well-known/oauth-authorization-server"} {
		t.Run(path, func(t *testing.T) {
			res, err := http.Get(i.URL() + path)
			if err != nil {
				t.Fatal(err)
			}
			defer res.Body.Close()
			if res.StatusCode != http.StatusOK {
				t.Fatalf("status %d", res.StatusCode)
			}
			if ct := res.Header.Get("Content-Type"); ct != "application/json" {
				t.Errorf("Content-Type = %q, want application/json", ct)
			}
			var got serverMetadata
			if err := json.NewDecoder(res.Body).Decode(&got); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("metadata (-want +got):\n%s", diff)
			}
		})
	}
}

func TestGoSDKAcceptsMetadata(t *testing.T) {
	i := startIssuer(t, Options{})
	for _, path := range []string{"/.well-known/oauth-authorization-server", "/.well-known/openid-configuration"} {
		asm, err := oauthex.GetAuthServerMeta(t.Context(), i.URL()+path, i.URL(), nil)
		if err != nil {
			t.Fatalf("GetAuthServerMeta(%s): %v", path, err)
		}
		if asm == nil {
			t.Fatalf("GetAuthServerMeta(%s): no metadata", path)
		}
		if asm.TokenEndpoint != i.URL()+"/token" {
			t.Errorf("%s: token_endpoint = %q", path, asm.TokenEndpoint)
		}
	}
}

// The gateway's verifier discovers the issuer with go-oidc; it must accept the document.
func TestGoOIDCDiscovers(t *testing.T) {
	i := startIssuer(t, Options{})
	p, err := oidc.NewProvider(t.Context(), i.URL())
	if err != nil {
		t.Fatalf("oidc.NewProvider: %v", err)
	}
	if p.Endpoint().TokenURL != i.URL()+"/token" {
		t.Errorf("token URL = %q", p.Endpoint().TokenURL)
	}
	var claims struct {
		JWKSURI string `json:"jwks_uri"`
	}
	if err := p.Claims(&claims); err != nil || claims.JWKSURI != i.URL()+"/jwks" {
		t.Errorf("jwks_uri = %q, %v", claims.JWKSURI, err)
	}
}

func TestJWKSDocument(t *testing.T) {
	i := startIssuer(t, Options{})
	res, err := http.Get(i.URL() + "/jwks")
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	if ct := res.Header.Get("Content-Type"); ct != "application/json" {
		t.Errorf("Content-Type = %q", ct)
	}
	var set struct {
		Keys []map[string]any `json:"keys"`
	}
	if err := json.NewDecoder(res.Body).Decode(&set); err != nil {
		t.Fatal(err)
	}
	if len(set.Keys) != 1 {
		t.Fatalf("%d keys, want 1", len(set.Keys))
	}
	k := set.Keys[0]
	for _, field := range []string{"d", "p", "q", "dp", "dq", "qi"} {
		if _, ok := k[field]; ok {
			t.Errorf("public JWKS leaks private member %q", field)
		}
	}
	if k["kty"] != "RSA" || k["alg"] != "RS256" || k["use"] != "sig" || k["kid"] == "" {
		t.Errorf("key = %v", k)
	}
}

func TestAuthorizeEndpointExplains(t *testing.T) {
	i := startIssuer(t, Options{})
	res, err := http.Get(i.URL() + "/authorize?response_type=code&client_id=alice")
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusBadRequest {
		t.Errorf("status %d, want 400", res.StatusCode)
	}
}
