package auth

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

// nestedJWS returns a JWS in JSON serialization whose payload is inner, with an unsigned
// (garbage) signature: what an attacker puts inside a token the issuer signed.
func nestedJWS(t *testing.T, inner map[string]any, general bool) []byte {
	t.Helper()
	payload, err := json.Marshal(inner)
	if err != nil {
		t.Fatal(err)
	}
	prot := b64([]byte(`{"alg":"RS256"}`))
	sig := b64([]byte("not a signature"))
	var doc any = map[string]any{"payload": b64(payload), "protected": prot, "signature": sig}
	if general {
		doc = map[string]any{"payload": b64(payload), "signatures": []any{map[string]any{"protected": prot, "signature": sig}}}
	}
	b, err := json.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// A token the issuer signed whose payload is itself a JWS must never yield the inner,
// unsigned claims: the principal would be whoever the inner claims name.
func TestNestedJWSIsRefused(t *testing.T) {
	kr := keyring()
	iss := newTestIssuer(t, kr.rsa1)
	clock := newFakeClock()
	v := newTestVerifier(t, iss, clock, func(c *Config) { c.CacheSize = -1 })
	now := clock.Now()
	inner := iss.claims(now, map[string]any{"sub": "mallory", "preferred_username": "mallory", "scope": "mcp:use mcp:write"})
	for _, general := range []bool{false, true} {
		name := "flattened"
		if general {
			name = "general"
		}
		t.Run(name, func(t *testing.T) {
			hdr := map[string]any{"alg": "RS256", "kid": "k1", "typ": "at+jwt"}
			tok := signRaw(t, hdr, nestedJWS(t, inner, general), kr.rsa1.alg, kr.rsa1.priv)
			p, err := v.Verify(context.Background(), tok)
			if err == nil {
				t.Fatalf("nested JWS accepted as user %q (subject %q, scopes %v)", p.User, p.Subject, p.Scopes)
			}
			if !errors.Is(err, ErrInvalidToken) {
				t.Fatalf("err = %v, want one wrapping ErrInvalidToken", err)
			}
		})
	}
}

func TestClaimsPayloadShapes(t *testing.T) {
	kr := keyring()
	iss := newTestIssuer(t, kr.rsa1)
	clock := newFakeClock()
	v := newTestVerifier(t, iss, clock, func(c *Config) { c.CacheSize = -1 })
	now := clock.Now()
	good, err := json.Marshal(iss.claims(now, nil))
	if err != nil {
		t.Fatal(err)
	}
	obj := strings.TrimSuffix(string(good), "}")
	// without returns the good claims less one, as an open object to append members to.
	without := func(claim string) string {
		b, err := json.Marshal(iss.claims(now, map[string]any{claim: nil}))
		if err != nil {
			t.Fatal(err)
		}
		return strings.TrimSuffix(string(b), "}")
	}
	hdr := map[string]any{"alg": "RS256", "kid": "k1"}
	sign := func(payload string, h map[string]any) string {
		if h == nil {
			h = hdr
		}
		return signRaw(t, h, []byte(payload), kr.rsa1.alg, kr.rsa1.priv)
	}
	tests := []struct {
		name, tok string
		ok        bool
		claim     string // for ClaimError, the claim named
	}{
		{"plain object", sign(string(good), nil), true, ""},
		{"surrounding whitespace", sign(" \n"+string(good)+"\n ", nil), true, ""},
		{"cty header", sign(string(good), map[string]any{"alg": "RS256", "kid": "k1", "cty": "JWT"}), false, ""},
		{"trailing object", sign(string(good)+`{"sub":"x"}`, nil), false, ""},
		{"trailing garbage", sign(string(good)+`x`, nil), false, ""},
		{"array", sign("["+string(good)+"]", nil), false, ""},
		{"string", sign(`"`+b64(good)+`"`, nil), false, ""},
		{"duplicate sub", sign(obj+`,"sub":"mallory"}`, nil), false, ""},
		{"duplicate scope", sign(obj+`,"scope":"mcp:use mcp:write admin"}`, nil), false, ""},
		{"case variant is another claim", sign(obj+`,"SUB":"mallory"}`, nil), true, ""},
		{"exp string", sign(without("exp")+`,"exp":"9999999999"}`, nil), false, "exp"},
		{"nbf string", sign(obj+`,"nbf":"0"}`, nil), false, "nbf"},
		{"iat bool", sign(without("iat")+`,"iat":true}`, nil), false, "iat"},
		{"exp null", sign(without("exp")+`,"exp":null}`, nil), false, "exp"},
		{"invalid utf-8", sign(obj+",\"x\":\"\xff\"}", nil), false, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := v.Verify(context.Background(), tt.tok)
			if tt.ok {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			if err == nil || !errors.Is(err, ErrInvalidToken) {
				t.Fatalf("err = %v, want a refusal wrapping ErrInvalidToken", err)
			}
			if tt.claim != "" {
				var ce *ClaimError
				if !errors.As(err, &ce) || ce.Claim != tt.claim {
					t.Fatalf("err = %v, want a ClaimError naming %q", err, tt.claim)
				}
			}
		})
	}
}
