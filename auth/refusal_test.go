package auth

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"testing/synctest"
	"time"
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
	synctest.Test(t, func(t *testing.T) {
		kr := keyring()
		iss := newTestIssuer(t, kr.rsa1, kr.rsa2)
		v := newTestVerifier(t, iss, func(c *Config) { c.CacheSize = -1 })
		now := time.Now()
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
			func() { // not t.Run, which a synctest bubble does not allow
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
					t.Errorf("%s: status %d", tt.name, rec.Code)
					return
				}
				var line map[string]any
				for _, l := range logLines(t, &logs) {
					if l["msg"] == "request refused by authentication" {
						line = l
					}
				}
				if line == nil {
					t.Errorf("%s: no refusal line at info level in:\n%s", tt.name, logs.String())
					return
				}
				for k, want := range tt.want {
					got, _ := json.Marshal(line[k])
					w, _ := json.Marshal(want)
					if string(got) != string(w) {
						t.Errorf("%s: %s = %s, want %s\nline: %v", tt.name, k, got, w, line)
					}
				}
				if hint, _ := line["hint"].(string); !strings.Contains(hint, tt.hint) {
					t.Errorf("%s: hint %q lacks %q", tt.name, hint, tt.hint)
				}
				answer := rec.Body.String() + strings.Join(rec.Header().Values("WWW-Authenticate"), " ")
				for _, leak := range tt.leaks {
					if strings.Contains(answer, leak) {
						t.Errorf("%s: the HTTP answer names %q: %s", tt.name, leak, answer)
					}
				}
				parts := strings.Split(tt.tok, ".")
				for _, p := range append(parts, tt.tok) {
					if strings.Contains(logs.String(), p) || strings.Contains(answer, p) {
						t.Errorf("%s: token text %.20q… reached the log or the answer", tt.name, p)
					}
				}
			}()
		}
	})
}

// TestIssuerHint: each way an iss can miss the configured issuer gets its own hint.
func TestIssuerHint(t *testing.T) {
	tests := []struct {
		got, want, hint string // hint: a phrase of the hint; "" for none
	}{
		{"http://localhost:8080/realms/x", "http://keycloak:8080/realms/x", "another host"},
		{"http://idp.example/realms/x", "https://idp.example/realms/x", "another scheme"},
		{"https://idp.example/realms/x/", "https://idp.example/realms/x", "trailing slash"},
		{"https://idp.example/realms/a", "https://idp.example/realms/b", "another Keycloak realm"},
		{"https://idp.example/a", "https://other.example/b", ""},
		{"not a url", "https://idp.example", ""},
	}
	for _, tt := range tests {
		h := issuerHint(tt.got, tt.want)
		if tt.hint == "" && h != "" || !strings.Contains(h, tt.hint) {
			t.Errorf("issuerHint(%q, %q) = %q, want a hint with %q", tt.got, tt.want, h, tt.hint)
		}
	}
}

func attrCount(attrs []slog.Attr, key string) int {
	n := 0
	for _, a := range attrs {
		if a.Key == key {
			n++
		}
	}
	return n
}

// TestRefusalLogAttrsIssuerAndAudienceOnce: the token's iss and aud are logged once,
// whether they come from the verifier's facts about the token or, for an error built
// elsewhere, from the error itself.
func TestRefusalLogAttrsIssuerAndAudienceOnce(t *testing.T) {
	kr := keyring()
	iss := newTestIssuer(t)
	v := newTestVerifier(t, iss, nil)
	verified := func(overrides map[string]any) error {
		_, err := v.Verify(t.Context(), token(t, kr.rsa1, iss.claims(time.Now(), overrides), nil))
		if err == nil {
			t.Fatalf("token with %v accepted", overrides)
		}
		return err
	}
	tests := []struct {
		name string
		err  error
		key  string
	}{
		{"bare issuer error", issuerError("https://other", "https://idp"), "iss"},
		{"verified issuer error", verified(map[string]any{"iss": "https://other"}), "iss"},
		{"bare audience error", audienceError([]string{"x"}, []string{testResource}, ""), "aud"},
		{"verified audience error", verified(map[string]any{"aud": "x"}), "aud"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			attrs := RefusalLogAttrs(tt.err)
			if n := attrCount(attrs, tt.key); n != 1 {
				t.Errorf("%q logged %d times in %v, want once", tt.key, n, attrs)
			}
			if n := attrCount(attrs, "expected_"+tt.key); n != 1 {
				t.Errorf("expected_%s logged %d times, want once", tt.key, n)
			}
		})
	}
}

// TestExpiredMomentsAgoHint: the "expired moments ago" hint is for a token that expired
// less than five minutes ago, a refresh the client missed; older ones get no hint.
func TestExpiredMomentsAgoHint(t *testing.T) {
	exp := time.Unix(1_700_000_000, 0)
	for _, tt := range []struct {
		ago  time.Duration
		hint bool
	}{
		{0, false}, // at the expiry instant itself (within the skew): nothing missed yet
		{time.Second, true},
		{5*time.Minute - time.Second, true},
		{5 * time.Minute, false},
		{time.Hour, false},
	} {
		h := logAttr(RefusalLogAttrs(expiredError(exp, exp.Add(tt.ago))), "hint")
		if got := strings.Contains(h, "expired moments ago"); got != tt.hint {
			t.Errorf("expired %v ago: hint %q, want hint=%v", tt.ago, h, tt.hint)
		}
	}
}

// TestAudienceHintNamesTheResource: the hint for a wrong audience names the value the token
// should carry, the first accepted audience, and copes with none configured.
func TestAudienceHintNamesTheResource(t *testing.T) {
	h := logAttr(RefusalLogAttrs(audienceError([]string{"x"}, []string{testResource, "other"}, "")), "hint")
	if !strings.Contains(h, `"`+testResource+`"`) {
		t.Errorf("hint %q does not name %s", h, testResource)
	}
	if h := logAttr(RefusalLogAttrs(audienceError([]string{"x"}, nil, "")), "hint"); !strings.Contains(h, `""`) {
		t.Errorf("hint with no audiences configured = %q", h)
	}
}
