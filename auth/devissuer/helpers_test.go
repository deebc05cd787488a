package devissuer

import (
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/lestrrat-go/jwx/v2/jwk"
	"github.com/lestrrat-go/jwx/v2/jwt"
)

const testAudience = "http://127.0.0.1:8080/mcp"

// startIssuer starts an issuer for t and stops it when t ends.
func startIssuer(t *testing.T, o Options) *Issuer {
	t.Helper()
	if o.Audience == "" {
		o.Audience = testAudience
	}
	i, err := Start(o)
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	t.Cleanup(func() { _ = i.Close() })
	return i
}

// client returns the registered client with the given id.
func client(t *testing.T, i *Issuer, id string) Client {
	t.Helper()
	for _, c := range i.Clients() {
		if c.ID == id {
			return c
		}
	}
	t.Fatalf("no client %q", id)
	return Client{}
}

type reply struct {
	status int
	header http.Header
	body   map[string]any
}

// post sends form to the token endpoint, with Basic credentials when basic is non-nil.
func post(t *testing.T, i *Issuer, form url.Values, basic *Client) reply {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, i.URL()+"/token", strings.NewReader(form.Encode()))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	if basic != nil {
		req.SetBasicAuth(basic.ID, basic.Secret)
	}
	return do(t, req)
}

func do(t *testing.T, req *http.Request) reply {
	t.Helper()
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	raw, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatal(err)
	}
	r := reply{status: res.StatusCode, header: res.Header}
	if err := json.Unmarshal(raw, &r.body); err != nil {
		t.Fatalf("%s %s: body is not a JSON object: %v\n%s", req.Method, req.URL.Path, err, raw)
	}
	return r
}

// payload decodes the claims of a JWT without verifying it, to look at their JSON shape.
func payload(t *testing.T, tok string) map[string]any {
	t.Helper()
	parts := strings.Split(tok, ".")
	if len(parts) != 3 {
		t.Fatalf("token has %d parts", len(parts))
	}
	raw, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatal(err)
	}
	return m
}

// gateway is the client the gateway uses for token exchange in these tests.
var gateway = Client{ID: "gemgate", Secret: "gateway-secret", User: "gemgate"}

func exchangeForm(subject string, kv ...string) url.Values {
	v := url.Values{
		"grant_type":         {"urn:ietf:params:oauth:grant-type:token-exchange"},
		"subject_token":      {subject},
		"subject_token_type": {"urn:ietf:params:oauth:token-type:access_token"},
		"audience":           {"gemstone"},
	}
	for n := 0; n+1 < len(kv); n += 2 {
		if kv[n+1] == "" {
			v.Del(kv[n])
		} else {
			v.Set(kv[n], kv[n+1])
		}
	}
	return v
}

// verifyWithJWKS checks tok the way a resource server would: keys from /jwks,
// signature, iss, aud and time claims. It returns the claims.
func verifyWithJWKS(t *testing.T, i *Issuer, tok, aud string) map[string]any {
	t.Helper()
	set, err := jwk.Fetch(t.Context(), i.URL()+"/jwks")
	if err != nil {
		t.Fatalf("fetch JWKS: %v", err)
	}
	parsed, err := jwt.ParseString(tok, jwt.WithKeySet(set), jwt.WithValidate(true),
		jwt.WithIssuer(i.URL()), jwt.WithAudience(aud))
	if err != nil {
		t.Fatalf("token does not verify against /jwks: %v", err)
	}
	claims, err := parsed.AsMap(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	return claims
}
