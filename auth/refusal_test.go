package auth

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"log/slog"
)

// logLines decodes JSON log lines.
func logLines(t *testing.T, b *bytes.Buffer) []map[string]any {
	t.Helper()
	var out []map[string]any
	for _, line := range strings.Split(strings.TrimSpace(b.String()), "\n") {
		if line == "" {
			continue
		}
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("log line %q: %v", line, err)
		}
		out = append(out, m)
	}
	return out
}

// A refused token's log line says why, expected against received; the HTTP answer does not,
// and neither ever holds the token.
func TestRefusalsSayWhyInTheLogOnly(t *testing.T) {
	kr := keyring()
	iss := newTestIssuer(t, kr.rsa1, kr.rsa2)
	clock := newFakeClock()
	v := newTestVerifier(t, iss, clock, func(c *Config) { c.CacheSize = -1 })
	now := clock.Now()
	// The same issuer path under another host: the classic Keycloak split horizon.
	otherHost := strings.Replace(iss.URL(), "127.0.0.1", "localhost", 1)

	tests := []struct {
		name  string
		tok   string
		want  map[string]any // attributes the refusal line must carry
		hint  string         // a substring of the hint, "" for none required
		leaks []string       // values that must not reach the HTTP answer
	}{
		{
			name: "issuer host differs",
			tok:  token(t, kr.rsa1, iss.claims(now, map[string]any{"iss": otherHost}), nil),
			want: map[string]any{"reason": "issuer", "iss": otherHost, "expected_iss": iss.URL(), "kid": "k1"},
			hint: "KC_HOSTNAME", leaks: []string{otherHost, iss.URL()},
		},
		{
			name: "audience",
			tok:  token(t, kr.rsa1, iss.claims(now, map[string]any{"aud": "account", "azp": "mcp-inspector"}), nil),
			want: map[string]any{"reason": "audience", "aud": []any{"account"}, "expected_aud": []any{testResource, "gemgate-extra"}, "azp": "mcp-inspector"},
			hint: `client "mcp-inspector"`, leaks: []string{"account", "mcp-inspector", testResource},
		},
		{
			name: "unknown kid of another issuer",
			tok:  token(t, kr.rsa3, iss.claims(now, map[string]any{"iss": "https://other.example/realms/y"}), nil),
			want: map[string]any{"reason": "unknown_key", "kid": "k3", "known_kids": []any{"k1", "k2"}, "iss": "https://other.example/realms/y", "claims_unverified": true},
			hint: "another issuer", leaks: []string{"k3", "other.example"},
		},
		{
			name: "expired",
			tok:  token(t, kr.rsa1, iss.claims(now, map[string]any{"exp": now.Add(-2 * time.Minute).Unix()}), nil),
			want: map[string]any{"reason": "expired", "expired_for": float64(2 * time.Minute), "allowed_skew": float64(DefaultClockSkew)},
		},
		{
			name: "issued in the future",
			tok:  token(t, kr.rsa1, iss.claims(now, map[string]any{"iat": now.Add(3 * time.Minute).Unix()}), nil),
			want: map[string]any{"reason": "not_yet_valid", "clock_skew": float64(3 * time.Minute), "allowed_skew": float64(DefaultClockSkew)},
			hint: "clock",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var logs bytes.Buffer
			a := NewAuthenticator(AuthenticatorOptions{
				Verifier:            v,
				ResourceMetadataURL: testMetadataURL,
				RequiredScopes:      []string{"mcp:use"},
				Logger:              slog.New(slog.NewJSONHandler(&logs, &slog.HandlerOptions{Level: slog.LevelInfo})),
			})
			rec := httptest.NewRecorder()
			a.Middleware(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { t.Error("refused token reached the handler") })).ServeHTTP(rec, bearerRequest(tt.tok))
			if rec.Code != http.StatusUnauthorized {
				t.Fatalf("status %d", rec.Code)
			}
			var line map[string]any
			for _, l := range logLines(t, &logs) {
				if l["msg"] == "request refused by authentication" {
					line = l
				}
			}
			if line == nil {
				t.Fatalf("no refusal line at info level in:\n%s", logs.String())
			}
			for k, want := range tt.want {
				got, _ := json.Marshal(line[k])
				w, _ := json.Marshal(want)
				if string(got) != string(w) {
					t.Errorf("%s = %s, want %s\nline: %v", k, got, w, line)
				}
			}
			if hint, _ := line["hint"].(string); !strings.Contains(hint, tt.hint) {
				t.Errorf("hint %q lacks %q", hint, tt.hint)
			}
			answer := rec.Body.String() + strings.Join(rec.Header().Values("WWW-Authenticate"), " ")
			for _, leak := range tt.leaks {
				if strings.Contains(answer, leak) {
					t.Errorf("the HTTP answer names %q: %s", leak, answer)
				}
			}
			parts := strings.Split(tt.tok, ".")
			for _, p := range append(parts, tt.tok) {
				if strings.Contains(logs.String(), p) || strings.Contains(answer, p) {
					t.Errorf("token text %.20q… reached the log or the answer", p)
				}
			}
		})
	}
}
