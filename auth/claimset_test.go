package auth

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"
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
	v := newTestVerifier(t, iss, func(c *Config) { c.CacheSize = -1 })
	now := time.Now()
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
	v := newTestVerifier(t, iss, func(c *Config) { c.CacheSize = -1 })
	now := time.Now()
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
		claim     string // for a claims refusal, the claim named
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
				if FailureReason(err) != ReasonClaims || logAttr(RefusalLogAttrs(err), "claim") != tt.claim {
					t.Fatalf("err = %v, want a claims refusal naming %q", err, tt.claim)
				}
			}
		})
	}
}

// TestNumericDate reads exp as RFC 7519 defines a NumericDate, at the edges of what gemgate
// accepts: integers and fractions from 0 to 9999-12-31T23:59:59Z, nothing negative, nothing
// later, nothing that is not a JSON number.
func TestNumericDate(t *testing.T) {
	const outOfRange, notDate = "is out of range", "is not a NumericDate"
	tests := []struct {
		raw     string
		want    time.Time
		wantErr string // a substring of the claims refusal's problem; "" for none
	}{
		{"0", time.Unix(0, 0), ""},
		{"0.0", time.Unix(0, 0), ""},
		{"1", time.Unix(1, 0), ""},
		{"1700000000", time.Unix(1700000000, 0), ""},
		{"1700000000.5", time.Unix(1700000000, 500_000_000), ""},
		{"1.7e9", time.Unix(1700000000, 0), ""},
		{"9", time.Unix(9, 0), ""},
		{"9000000000", time.Unix(9000000000, 0), ""},
		{"9.5", time.Unix(9, 500_000_000), ""},
		{"253402300799", time.Unix(253402300799, 0), ""}, // 9999-12-31T23:59:59Z
		{"253402300799.0", time.Unix(253402300799, 0), ""},
		{"253402300800", time.Time{}, outOfRange},
		{"253402300799.5", time.Time{}, outOfRange},
		{"253402300800.0", time.Time{}, outOfRange},
		{"1e300", time.Time{}, outOfRange},
		{"99999999999999999999", time.Time{}, outOfRange},
		{"-1", time.Time{}, outOfRange},
		{"-0.5", time.Time{}, outOfRange},
		{"-1700000000", time.Time{}, outOfRange},
		{`"1700000000"`, time.Time{}, notDate},
		{"null", time.Time{}, notDate},
		{"true", time.Time{}, notDate},
		{"[1]", time.Time{}, notDate},
		{"{}", time.Time{}, notDate},
	}
	for _, tt := range tests {
		t.Run(tt.raw, func(t *testing.T) {
			cs, err := parseClaimSet([]byte(`{"exp":` + tt.raw + `}`))
			if err != nil {
				t.Fatalf("parseClaimSet: %v", err)
			}
			got, ok, err := cs.numericDate(claimExpiry)
			if !ok {
				t.Errorf("ok = false for a present claim")
			}
			if tt.wantErr == "" {
				if err != nil || !got.Equal(tt.want) {
					t.Errorf("numericDate(%s) = %v, %v; want %v", tt.raw, got, err, tt.want)
				}
				return
			}
			attrs := RefusalLogAttrs(err)
			if FailureReason(err) != ReasonClaims || !strings.Contains(logAttr(attrs, "problem"), tt.wantErr) || logAttr(attrs, "claim") != claimExpiry {
				t.Errorf("numericDate(%s) = %v, %v; want a claims refusal %q", tt.raw, got, err, tt.wantErr)
			}
			if !got.IsZero() {
				t.Errorf("numericDate(%s) returned the time %v with its error", tt.raw, got)
			}
		})
	}
	cs, err := parseClaimSet([]byte(`{"sub":"a"}`))
	if err != nil {
		t.Fatal(err)
	}
	if got, ok, err := cs.numericDate(claimExpiry); ok || err != nil || !got.IsZero() {
		t.Errorf("absent exp = %v, %v, %v; want zero, false, nil", got, ok, err)
	}
}

// TestClaimsDepthLimit: claims may nest maxClaimsDepth levels (the claims object itself
// being the first) and not one more, whether by arrays or by objects.
func TestClaimsDepthLimit(t *testing.T) {
	shapes := map[string]func(depth int) string{
		"arrays": func(depth int) string {
			return `{"sub":"a","x":` + strings.Repeat("[", depth-1) + strings.Repeat("]", depth-1) + `}`
		},
		"objects": func(depth int) string {
			return `{"sub":"a","x":` + strings.Repeat(`{"k":`, depth-2) + "{}" + strings.Repeat("}", depth-2) + `}`
		},
	}
	for name, build := range shapes {
		t.Run(name, func(t *testing.T) {
			at, over := build(maxClaimsDepth), build(maxClaimsDepth+1)
			if d := bracketDepth(at); d != maxClaimsDepth {
				t.Fatalf("built depth %d, want %d", d, maxClaimsDepth)
			}
			if err := checkOneObject([]byte(at)); err != nil {
				t.Errorf("depth %d refused: %v", maxClaimsDepth, err)
			}
			err := checkOneObject([]byte(over))
			if FailureReason(err) != ReasonMalformed || !strings.Contains(logAttr(RefusalLogAttrs(err), "problem"), "too deeply") {
				t.Errorf("depth %d: %v, want nested too deeply", maxClaimsDepth+1, err)
			}
		})
	}
}

// bracketDepth is the deepest nesting of s, which holds no brackets inside strings.
func bracketDepth(s string) int {
	depth, deepest := 0, 0
	for _, c := range s {
		switch c {
		case '{', '[':
			depth++
			deepest = max(deepest, depth)
		case '}', ']':
			depth--
		}
	}
	return deepest
}

// TestLoneSurrogateEscapesAreRefused: the claims are read so that one payload has one
// meaning (invalid UTF-8 is refused because encoding/json "would quietly replace bad bytes").
// A lone UTF-16 surrogate escape is the same thing spelled in JSON: encoding/json turns
// "\ud800", "\udbff", "\udc00" ... alike into U+FFFD, so distinct user names (or subjects)
// as the issuer and any other reader keep them become one principal at gemgate: one worker,
// one {user} account and data folder, one session owner.
func TestLoneSurrogateEscapesAreRefused(t *testing.T) {
	kr := keyring()
	iss := newTestIssuer(t, kr.rsa1)
	v := newTestVerifier(t, iss, func(c *Config) { c.UserClaim = "preferred_username" })
	sign := func(esc string) string {
		c := iss.claims(time.Now(), map[string]any{"preferred_username": nil, "sub": nil})
		payload := mustJSON(t, c)
		payload = append(payload[:len(payload)-1], []byte(`,"sub":"user-`+esc+`","preferred_username":"alice`+esc+`"}`)...)
		return signRaw(t, map[string]any{"alg": "RS256", "kid": "k1", "typ": "at+jwt"}, payload, kr.rsa1.alg, kr.rsa1.priv)
	}
	a, errA := v.Verify(context.Background(), sign(`\ud800`))
	b, errB := v.Verify(context.Background(), sign(`\udc00`))
	if errA == nil && errB == nil && a.User == b.User && a.Subject == b.Subject {
		t.Errorf("two different signed identities (\\ud800 and \\udc00) became one principal: sub %q, user %q", a.Subject, a.User)
	}
}
