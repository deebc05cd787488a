package auth

import (
	"net/http"
	"net/http/httptest"
	"testing"
)

func TestChallengeScopesNameWhatClientsShouldAskFor(t *testing.T) {
	for _, tt := range []struct {
		name      string
		challenge []string
		want      string
	}{
		{"default is the required scopes", nil, `Bearer scope="mcp:use", resource_metadata="https://gw.example/.well-known/oauth-protected-resource/mcp"`},
		{"configured", []string{"mcp:use", "mcp:write"}, `Bearer scope="mcp:use mcp:write", resource_metadata="https://gw.example/.well-known/oauth-protected-resource/mcp"`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			a := NewAuthenticator(AuthenticatorOptions{
				ResourceMetadataURL: "https://gw.example/.well-known/oauth-protected-resource/mcp",
				RequiredScopes:      []string{"mcp:use"},
				ChallengeScopes:     tt.challenge,
			})
			rec := httptest.NewRecorder()
			a.Middleware(http.NotFoundHandler()).ServeHTTP(rec, httptest.NewRequest("POST", "/mcp", nil))
			if rec.Code != http.StatusUnauthorized {
				t.Fatalf("status %d", rec.Code)
			}
			if got := rec.Header().Get("WWW-Authenticate"); got != tt.want {
				t.Errorf("WWW-Authenticate = %s\nwant %s", got, tt.want)
			}
		})
	}
}
