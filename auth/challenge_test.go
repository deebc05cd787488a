package auth

import (
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/oauthex"
)

// The two examples of the MCP authorization spec (2025-11-25, "Protected
// Resource Metadata Discovery Requirements" and "Runtime Insufficient Scope
// Errors"), folded onto one line as a client receives them.
const (
	spec401 = `Bearer resource_metadata="https://mcp.example.com/.well-known/oauth-protected-resource", scope="files:read"`
	spec403 = `Bearer error="insufficient_scope", scope="files:read files:write user:profile", resource_metadata="https://mcp.example.com/.well-known/oauth-protected-resource", error_description="Additional file write permission required"`
)

func parseChallenge(t *testing.T, v string) (string, map[string]string) {
	t.Helper()
	cs, err := oauthex.ParseWWWAuthenticate([]string{v})
	if err != nil || len(cs) != 1 {
		t.Fatalf("parse %q: %v %v", v, cs, err)
	}
	return cs[0].Scheme, cs[0].Params
}

func TestChallengeMatchesSpecExamples(t *testing.T) {
	rm := "https://mcp.example.com/.well-known/oauth-protected-resource"
	tests := []struct {
		name string
		c    Challenge
		spec string
	}{
		{"401", Challenge{Scopes: []string{"files:read"}, ResourceMetadata: rm}, spec401},
		{"403", Challenge{
			Error:            "insufficient_scope",
			Scopes:           []string{"files:read", "files:write", "user:profile"},
			ResourceMetadata: rm,
			Description:      "Additional file write permission required",
		}, spec403},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			wantScheme, want := parseChallenge(t, tt.spec)
			gotScheme, got := parseChallenge(t, tt.c.String())
			if gotScheme != wantScheme {
				t.Errorf("scheme %q, want %q", gotScheme, wantScheme)
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("params (-spec +ours):\n%s", diff)
			}
		})
	}
	// The 403 example's parameter order is the one we emit: byte-identical.
	if got := tests[1].c.String(); got != spec403 {
		t.Errorf("403 challenge\n got %s\nwant %s", got, spec403)
	}
}

func TestChallengeString(t *testing.T) {
	tests := []struct {
		name string
		c    Challenge
		want string
	}{
		{"empty", Challenge{}, "Bearer"},
		{"no token", Challenge{Scopes: []string{"mcp:use"}, ResourceMetadata: "https://h/.well-known/oauth-protected-resource/mcp"},
			`Bearer scope="mcp:use", resource_metadata="https://h/.well-known/oauth-protected-resource/mcp"`},
		{"invalid token", Challenge{Error: "invalid_token", Scopes: []string{"mcp:use"}, ResourceMetadata: "https://h/m", Description: "token expired"},
			`Bearer error="invalid_token", scope="mcp:use", resource_metadata="https://h/m", error_description="token expired"`},
		{"quotes and backslashes escaped", Challenge{ResourceMetadata: `https://h/a"b\c`},
			`Bearer resource_metadata="https://h/a\"b\\c"`},
		{"header injection dropped", Challenge{ResourceMetadata: "https://h/\r\nX-Evil: 1", Description: "bad\r\nX-Evil: 1"},
			`Bearer resource_metadata="https://h/X-Evil: 1", error_description="badX-Evil: 1"`},
		{"description keeps RFC 6750 characters only", Challenge{Error: "invalid_token", Description: `say "hi" \ é`},
			`Bearer error="invalid_token", error_description="say hi  "`},
		{"invalid and duplicate scopes dropped", Challenge{Scopes: []string{"a", "", `b"c`, "d e", "a", "ok:1"}},
			`Bearer scope="a ok:1"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := tt.c.String()
			if got != tt.want {
				t.Errorf("got  %s\nwant %s", got, tt.want)
			}
			if strings.ContainsAny(got, "\r\n") {
				t.Errorf("control characters in %q", got)
			}
		})
	}
	// A client parser recovers an escaped value exactly.
	_, p := parseChallenge(t, Challenge{ResourceMetadata: `https://h/a"b\c`}.String())
	if p["resource_metadata"] != `https://h/a"b\c` {
		t.Errorf("round trip = %q", p["resource_metadata"])
	}
}

func TestBearerToken(t *testing.T) {
	tests := []struct {
		name    string
		headers []string
		query   string
		want    string
		wantErr error
	}{
		{"bearer", []string{"Bearer abc.def.ghi"}, "", "abc.def.ghi", nil},
		{"case-insensitive scheme", []string{"bearer abc"}, "", "abc", nil},
		{"extra spaces", []string{"  Bearer    abc  "}, "", "abc", nil},
		{"tab", []string{"Bearer\tabc"}, "", "", ErrInvalidRequest},
		{"space and tab", []string{"Bearer \tabc"}, "", "", ErrInvalidToken},
		{"no-break space after the token", []string{"Bearer abc\u00a0"}, "", "", ErrInvalidToken},
		{"no-break space before the token", []string{"Bearer\u00a0abc"}, "", "", ErrNoToken},
		{"absent", nil, "", "", ErrNoToken},
		{"basic", []string{"Basic YWxpY2U6cw=="}, "", "", ErrNoToken},
		{"bearer-ish scheme", []string{"Bearerabc"}, "", "", ErrNoToken},
		{"scheme only", []string{"Bearer"}, "", "", ErrInvalidRequest},
		{"empty", []string{"Bearer   "}, "", "", ErrInvalidRequest},
		{"two headers", []string{"Bearer a", "Bearer b"}, "", "", ErrInvalidRequest},
		{"query", nil, "access_token=abc", "", ErrInvalidRequest},
		{"query and header", []string{"Bearer abc"}, "x=1&access_token=abc", "", ErrInvalidRequest},
		{"other query ok", []string{"Bearer abc"}, "token=1", "abc", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, _ := http.NewRequest(http.MethodPost, "https://h/mcp?"+tt.query, nil)
			for _, h := range tt.headers {
				r.Header.Add("Authorization", h)
			}
			got, err := BearerToken(r)
			if got != tt.want {
				t.Errorf("token = %q, want %q", got, tt.want)
			}
			if tt.wantErr == nil && err != nil || tt.wantErr != nil && !errors.Is(err, tt.wantErr) {
				t.Errorf("err = %v, want %v", err, tt.wantErr)
			}
		})
	}
}
