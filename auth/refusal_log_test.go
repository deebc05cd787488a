package auth

import (
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
	"testing"
)

// staticVerifier accepts every token as p.
type staticVerifier struct{ p Principal }

func (v staticVerifier) Verify(context.Context, string) (Principal, error) { return v.p, nil }

// TestRefusalLogNamesTheUserOnlyFor403: a 403 is a refusal of a known user, and its log
// line says who and with which scopes, so an operator can see who needs a grant. A 401
// has no verified user to name.
func TestRefusalLogNamesTheUserOnlyFor403(t *testing.T) {
	h := &records{}
	a := NewAuthenticator(AuthenticatorOptions{
		Verifier:            staticVerifier{Principal{User: "alice", Scopes: []string{"openid"}}},
		ResourceMetadataURL: testMetadataURL,
		RequiredScopes:      []string{"mcp:use"},
		Logger:              slog.New(h),
	})
	mw := a.Middleware(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {
		t.Error("a refused request reached the handler")
	}))

	rec := httptest.NewRecorder()
	mw.ServeHTTP(rec, bearerRequest("abc"))
	if rec.Code != http.StatusForbidden {
		t.Fatalf("status %d, want 403", rec.Code)
	}
	rec = httptest.NewRecorder()
	mw.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, "/mcp", nil))
	if rec.Code != http.StatusUnauthorized {
		t.Fatalf("status %d, want 401", rec.Code)
	}

	lines := h.find("request refused by authentication")
	if len(lines) != 2 {
		t.Fatalf("%d refusal lines, want 2", len(lines))
	}
	if got := attr(lines[0], "user").String(); got != "alice" {
		t.Errorf("403 line: user = %q, want alice", got)
	}
	if got, ok := attr(lines[0], "granted_scopes").Any().([]string); !ok || !slices.Equal(got, []string{"openid"}) {
		t.Errorf("403 line: granted_scopes = %v, want [openid]", attr(lines[0], "granted_scopes"))
	}
	if got := attr(lines[1], "user"); got.Kind() != slog.KindAny || got.Any() != nil {
		t.Errorf("401 line names a user: %v", got)
	}
	if lines[1].Level != slog.LevelDebug {
		t.Errorf("a request without a token is logged at %v, want DEBUG", lines[1].Level)
	}
}
