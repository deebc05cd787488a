package test

import (
	"bytes"
	"crypto"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
)

// signPayloadRS256 signs an arbitrary payload (not necessarily a claims object) with key.
func signPayloadRS256(t *testing.T, key *rsa.PrivateKey, header map[string]any, payload []byte) string {
	t.Helper()
	input := b64JSON(header) + "." + b64(payload)
	sum := sha256.Sum256([]byte(input))
	sig, err := rsa.SignPKCS1v15(rand.Reader, key, crypto.SHA256, sum[:])
	if err != nil {
		t.Fatal(err)
	}
	return input + "." + b64(sig)
}

// authAttempt posts initialize with the Authorization header value and returns the status
// and the WWW-Authenticate error code.
func authAttempt(t *testing.T, url, authorization string) (int, string) {
	t.Helper()
	body := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"attack","version":"1"}}}`
	req, err := http.NewRequest(http.MethodPost, url, bytes.NewReader([]byte(body)))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Authorization", authorization)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<20))
	resp.Body.Close()
	code := ""
	if h := resp.Header.Get("WWW-Authenticate"); h != "" {
		code = parseChallenge(t, h)["error"]
	}
	return resp.StatusCode, code
}

// Tokens the issuer's key really signed, whose payload is not one plain claims object,
// never open a session: above all a payload that is itself a JWS in JSON serialization,
// whose inner unsigned claims once became the principal.
func TestAttackTokenPayloadConfusion(t *testing.T) {
	t.Parallel()
	iss := newTestIssuer(t)
	g := startServe(t, "--issuer", iss.URL(), "--worker", "demo")
	good := iss.claims(g.URL, "carol", "mcp:use")
	hdr := map[string]any{"typ": "JWT", "kid": testKID, "alg": "RS256"}
	mallory := with(good, func(c map[string]any) { c["sub"] = "mallory"; c["scope"] = "mcp:use mcp:write" })
	innerPayload := b64JSON(mallory)
	fakeSig := b64([]byte("unsigned"))
	prot := b64JSON(map[string]any{"alg": "RS256"})
	marshal := func(v any) []byte {
		b, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	goodJSON := marshal(good)
	open := strings.TrimSuffix(string(goodJSON), "}")
	without := func(name string) string {
		return strings.TrimSuffix(string(marshal(with(good, func(c map[string]any) { delete(c, name) }))), "}")
	}
	sign := func(payload []byte) string { return signPayloadRS256(t, iss.key, hdr, payload) }

	cases := []struct{ name, authorization string }{
		{"nested JWS, general JSON serialization", "Bearer " + sign(marshal(map[string]any{
			"payload": innerPayload, "signatures": []any{map[string]any{"protected": prot, "signature": fakeSig}}}))},
		{"nested JWS, flattened JSON serialization", "Bearer " + sign(marshal(map[string]any{
			"payload": innerPayload, "protected": prot, "signature": fakeSig}))},
		{"cty header announcing a nested JWT", "Bearer " + signPayloadRS256(t, iss.key, with(hdr, func(h map[string]any) { h["cty"] = "JWT" }), goodJSON)},
		{"compact JWS as a JSON string payload", "Bearer " + sign(marshal(iss.mint(mallory)))},
		{"claims in an array", "Bearer " + sign([]byte("["+string(goodJSON)+"]"))},
		{"a second object after the claims", "Bearer " + sign([]byte(string(goodJSON)+string(marshal(mallory))))},
		{"duplicate sub", "Bearer " + sign([]byte(open+`,"sub":"mallory"}`))},
		{"duplicate scope", "Bearer " + sign([]byte(open+`,"scope":"mcp:use mcp:write"}`))},
		{"exp as a string", "Bearer " + sign([]byte(without("exp")+`,"exp":"9999999999"}`))},
		{"nbf as a string", "Bearer " + sign([]byte(without("nbf")+`,"nbf":"0"}`))},
		{"iat as a boolean", "Bearer " + sign([]byte(without("iat")+`,"iat":false}`))},
		{"exp beyond year 9999", "Bearer " + sign([]byte(without("exp")+`,"exp":1e300}`))},
		{"space inside the token", "Bearer " + iss.mint(good) + " " + iss.mint(mallory)},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			status, code := authAttempt(t, g.URL, tc.authorization)
			if status != http.StatusUnauthorized || code != "invalid_token" {
				t.Errorf("status %d error %q, want 401 invalid_token", status, code)
			}
		})
	}
	if n := g.workers(); n != 0 {
		t.Errorf("%d workers started for refused tokens", n)
	}
	// The control: the same issuer's plain token opens a session.
	if status, _ := authAttempt(t, g.URL, "Bearer "+iss.mint(good)); status != http.StatusOK {
		t.Fatalf("a good token got %d", status)
	}
}

// A refused token's log line says why (expected against received iss, a hint for the
// localhost-vs-service-name mix-up), and neither the log nor the answer holds the token.
func TestAttackRefusalLogSaysWhyWithoutTheToken(t *testing.T) {
	t.Parallel()
	iss := newTestIssuer(t)
	g := startServe(t, "--issuer", iss.URL(), "--worker", "demo")
	otherHost := strings.Replace(iss.URL(), "127.0.0.1", "localhost", 1)
	tok := iss.mint(with(iss.claims(g.URL, "carol", "mcp:use"), func(c map[string]any) { c["iss"] = otherHost }))
	if status, code := authAttempt(t, g.URL, "Bearer "+tok); status != http.StatusUnauthorized || code != "invalid_token" {
		t.Fatalf("status %d error %q", status, code)
	}
	var line map[string]any
	deadline := time.Now().Add(10 * time.Second)
	for line == nil && time.Now().Before(deadline) {
		for _, l := range strings.Split(g.logs.String(), "\n") {
			var m map[string]any
			if json.Unmarshal([]byte(l), &m) == nil && m["msg"] == "request refused by authentication" && m["reason"] == "issuer" {
				line = m
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	if line == nil {
		t.Fatalf("no refusal line with reason issuer:\n%s", g.logs)
	}
	if line["iss"] != otherHost || line["expected_iss"] != iss.URL() || line["kid"] != testKID || line["client"] == nil {
		t.Errorf("refusal line %v lacks iss %q / expected_iss %q / kid / client", line, otherHost, iss.URL())
	}
	if hint, _ := line["hint"].(string); !strings.Contains(hint, "another host") {
		t.Errorf("hint = %q", hint)
	}
	for _, part := range strings.Split(tok, ".")[1:] {
		if strings.Contains(g.logs.String(), part) {
			t.Errorf("token text (%.12s...) in the log", part)
		}
	}
}
