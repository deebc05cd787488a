package test

import (
	"crypto"
	"crypto/hmac"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"math/big"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"
)

// startServe runs `gemgate serve` on a free loopback port with flags and waits until it
// logs that it serves. g.URL is the MCP URL it logged; it is stopped like startDev's.
func startServe(t *testing.T, flags ...string) *gemgate {
	t.Helper()
	return startServeEnv(t, nil, flags...)
}

// startServeEnv is startServe with env added to gemgate's environment: the tests hand
// gemgate its variables this way rather than through t.Setenv, which would keep them from
// running in parallel.
func startServeEnv(t *testing.T, env []string, flags ...string) *gemgate {
	t.Helper()
	args := append([]string{"serve", "--drain-delay", "0s", "--listen", "127.0.0.1:0", "--metrics-listen", "off", "--data-dir", t.TempDir(),
		"--log-format", "json", "--log-level", "debug"}, flags...)
	return launch(t, launchOpts{Args: args, Env: env, LogLine: func(g *gemgate, line []byte) bool {
		var ev struct{ Msg, MCP string }
		if json.Unmarshal(line, &ev) != nil || ev.Msg != "gemgate serving" {
			return false
		}
		g.URL = ev.MCP
		return true
	}})
}

// parseChallenge reads a Bearer challenge's parameters (quoted values, no escapes needed here).
func parseChallenge(t *testing.T, h string) map[string]string {
	t.Helper()
	rest, ok := strings.CutPrefix(h, "Bearer ")
	if !ok {
		t.Fatalf("WWW-Authenticate %q is not a Bearer challenge", h)
	}
	out := map[string]string{}
	for rest = strings.TrimSpace(rest); rest != ""; {
		name, after, ok := strings.Cut(rest, `="`)
		value, tail, ok2 := strings.Cut(after, `"`)
		if !ok || !ok2 {
			t.Fatalf("WWW-Authenticate %q: cannot parse at %q", h, rest)
		}
		out[strings.TrimSpace(name)] = value
		rest = strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(tail), ","))
	}
	return out
}

// testIssuer is an OpenID provider the test controls: discovery and JWKS over httptest, and
// tokens signed by hand, so that every claim and header can be wrong on purpose.
type testIssuer struct {
	srv   *httptest.Server
	key   *rsa.PrivateKey
	other *rsa.PrivateKey // a key the JWKS does not publish
}

const testKID = "e2e-key-1"

func newTestIssuer(t *testing.T) *testIssuer {
	t.Helper()
	iss := &testIssuer{key: genKey(t), other: genKey(t)}
	mux := http.NewServeMux()
	iss.srv = httptest.NewUnstartedServer(mux)
	mux.HandleFunc("/.well-known/openid-configuration", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(map[string]any{
			"issuer": iss.URL(), "jwks_uri": iss.URL() + "/jwks", "token_endpoint": iss.URL() + "/token",
			"authorization_endpoint": iss.URL() + "/authorize", "response_types_supported": []string{"code"},
			"subject_types_supported": []string{"public"}, "id_token_signing_alg_values_supported": []string{"RS256"},
		})
	})
	mux.HandleFunc("/jwks", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(map[string]any{"keys": []any{publicJWK(&iss.key.PublicKey, testKID)}})
	})
	iss.srv.Start()
	t.Cleanup(iss.srv.Close)
	return iss
}

func (i *testIssuer) URL() string { return i.srv.URL }

func genKey(t *testing.T) *rsa.PrivateKey {
	t.Helper()
	k, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func publicJWK(k *rsa.PublicKey, kid string) map[string]any {
	return map[string]any{"kty": "RSA", "kid": kid, "use": "sig", "alg": "RS256",
		"n": b64(k.N.Bytes()), "e": b64(big.NewInt(int64(k.E)).Bytes())}
}

func b64(b []byte) string { return base64.RawURLEncoding.EncodeToString(b) }

func b64JSON(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return b64(b)
}

// claims are good claims for the gateway at aud, for user sub, valid for an hour.
func (i *testIssuer) claims(aud, sub, scope string) map[string]any {
	now := time.Now()
	return map[string]any{"iss": i.URL(), "aud": aud, "sub": sub, "scope": scope,
		"iat": now.Unix(), "nbf": now.Unix(), "exp": now.Add(time.Hour).Unix()}
}

// signRS256 signs header.payload with key; header gets alg RS256 unless it says otherwise.
func signRS256(key *rsa.PrivateKey, header, claims map[string]any) string {
	if _, ok := header["alg"]; !ok {
		header["alg"] = "RS256"
	}
	input := b64JSON(header) + "." + b64JSON(claims)
	sum := sha256.Sum256([]byte(input))
	sig, err := rsa.SignPKCS1v15(rand.Reader, key, crypto.SHA256, sum[:])
	if err != nil {
		panic(err)
	}
	return input + "." + b64(sig)
}

func (i *testIssuer) mint(claims map[string]any) string {
	return signRS256(i.key, map[string]any{"typ": "JWT", "kid": testKID}, claims)
}

// with returns a copy of m changed by f.
func with(m map[string]any, f func(map[string]any)) map[string]any {
	c := map[string]any{}
	for k, v := range m {
		c[k] = v
	}
	f(c)
	return c
}

func TestBadTokensNeverReachAWorker(t *testing.T) {
	t.Parallel()
	iss := newTestIssuer(t)
	g := startServe(t, "--issuer", iss.URL(), "--worker", "demo")
	good := iss.claims(g.URL, "carol", "mcp:use mcp:write")
	valid := iss.mint(good)
	hdr := map[string]any{"typ": "JWT", "kid": testKID}
	pubDER, _ := x509.MarshalPKIXPublicKey(&iss.key.PublicKey)
	pubPEM := pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: pubDER})
	hs := func(alg string, secret []byte) string {
		input := b64JSON(map[string]any{"alg": alg, "typ": "JWT", "kid": testKID}) + "." + b64JSON(good)
		mac := hmac.New(sha256.New, secret)
		mac.Write([]byte(input))
		return input + "." + b64(mac.Sum(nil))
	}
	parts := strings.Split(valid, ".")
	tamperedPayload := parts[0] + "." + b64JSON(with(good, func(c map[string]any) { c["sub"] = "mallory" })) + "." + parts[2]
	sig, _ := base64.RawURLEncoding.DecodeString(parts[2])
	sig[10] ^= 0x01
	tamperedSig := parts[0] + "." + parts[1] + "." + b64(sig)
	now := time.Now()
	claim := func(f func(map[string]any)) string { return iss.mint(with(good, f)) }
	header := func(f func(map[string]any)) string { return signRS256(iss.key, with(hdr, f), good) }

	type tc struct {
		name   string
		auth   []string // Authorization header values
		query  string   // appended to the URL
		status int
		err    string // the challenge's error code; "" means none
	}
	bad := func(name, token string) tc {
		return tc{name: name, auth: []string{"Bearer " + token}, status: 401, err: "invalid_token"}
	}
	tests := []tc{
		bad("alg none", b64JSON(map[string]any{"alg": "none", "typ": "JWT"})+"."+parts[1]+"."),
		bad("alg None with signature", b64JSON(map[string]any{"alg": "None", "kid": testKID})+"."+parts[1]+"."+parts[2]),
		bad("HS256 keyed with the public key PEM", hs("HS256", pubPEM)),
		bad("HS256 keyed with the public key DER", hs("HS256", pubDER)),
		bad("HS512 keyed with the public key PEM", hs("HS512", pubPEM)),
		bad("unknown kid", signRS256(iss.other, map[string]any{"kid": "no-such-kid"}, good)),
		bad("known kid, wrong key", signRS256(iss.other, with(hdr, func(map[string]any) {}), good)),
		bad("alg RS384 over an RS256 signature", header(func(h map[string]any) { h["alg"] = "RS384" })),
		bad("jku header", header(func(h map[string]any) { h["jku"] = "http://127.0.0.1:1/jwks" })),
		bad("x5u header", header(func(h map[string]any) { h["x5u"] = "http://127.0.0.1:1/cert.pem" })),
		bad("embedded jwk header", header(func(h map[string]any) { h["jwk"] = publicJWK(&iss.key.PublicKey, testKID) })),
		bad("crit header", header(func(h map[string]any) { h["crit"] = []string{"exp"}; h["exp"] = 1 })),
		bad("wrong iss", claim(func(c map[string]any) { c["iss"] = "https://evil.example" })),
		bad("iss with a trailing slash", claim(func(c map[string]any) { c["iss"] = iss.URL() + "/" })),
		bad("no iss", claim(func(c map[string]any) { delete(c, "iss") })),
		bad("wrong aud", claim(func(c map[string]any) { c["aud"] = "https://other.example/mcp" })),
		bad("aud list without the resource", claim(func(c map[string]any) { c["aud"] = []string{"a", "b"} })),
		bad("aud with a trailing slash", claim(func(c map[string]any) { c["aud"] = g.URL + "/" })),
		bad("no aud", claim(func(c map[string]any) { delete(c, "aud") })),
		bad("expired", claim(func(c map[string]any) { c["exp"] = now.Add(-time.Hour).Unix() })),
		bad("expired beyond the skew", claim(func(c map[string]any) { c["exp"] = now.Add(-2 * time.Minute).Unix() })),
		bad("no exp", claim(func(c map[string]any) { delete(c, "exp") })),
		bad("exp not a number", claim(func(c map[string]any) { c["exp"] = "tomorrow" })),
		bad("nbf in the future", claim(func(c map[string]any) { c["nbf"] = now.Add(time.Hour).Unix() })),
		bad("iat in the future", claim(func(c map[string]any) { c["iat"] = now.Add(time.Hour).Unix() })),
		bad("no sub", claim(func(c map[string]any) { delete(c, "sub") })),
		bad("tampered payload", tamperedPayload),
		bad("tampered signature", tamperedSig),
		bad("signature stripped", parts[0]+"."+parts[1]+"."),
		// Over the 16 KiB gemgate parses, under the 64 KiB of headers net/http reads (more
		// is 431, TestHeaderLimitFitsTheConnectionBudget).
		bad("40 KiB token", claim(func(c map[string]any) { c["pad"] = strings.Repeat("x", 40<<10) })),
		bad("garbage", "not-a-jwt"),
		bad("two segments", parts[0]+"."+parts[1]),
		bad("JSON, not a JWT", `{"sub":"carol"}`),
		bad("base64 garbage", "eyJhbGciOi.eyJzdWIiOi.AAAA"),
		{name: "no Authorization header", status: 401},
		{name: "Basic scheme", auth: []string{"Basic " + base64.StdEncoding.EncodeToString([]byte("carol:pw"))}, status: 401},
		{name: "empty bearer", auth: []string{"Bearer "}, status: 401, err: "invalid_request"},
		{name: "Bearer without token", auth: []string{"Bearer"}, status: 401, err: "invalid_request"},
		{name: "token in the query", query: "?access_token=" + valid, status: 401, err: "invalid_request"},
		{name: "token in the query and header", auth: []string{"Bearer " + valid}, query: "?access_token=" + valid, status: 401, err: "invalid_request"},
		{name: "two Authorization headers", auth: []string{"Bearer " + valid, "Bearer " + valid}, status: 401, err: "invalid_request"},
		{name: "missing the required scope", auth: []string{"Bearer " + claim(func(c map[string]any) { c["scope"] = "mcp:write" })}, status: 403, err: "insufficient_scope"},
	}
	metaURL := strings.Replace(g.URL, "/mcp", "/.well-known/oauth-protected-resource/mcp", 1)
	initBody := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"` + protocolVersion + `","capabilities":{},"clientInfo":{"name":"bad","version":"1"}}}`
	var tokens []string
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req, _ := http.NewRequest("POST", g.URL+tt.query, strings.NewReader(initBody))
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Accept", "application/json, text/event-stream")
			for _, a := range tt.auth {
				req.Header.Add("Authorization", a)
				tokens = append(tokens, strings.TrimPrefix(a, "Bearer "))
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != tt.status {
				t.Fatalf("status %d, want %d", resp.StatusCode, tt.status)
			}
			ch := resp.Header.Get("WWW-Authenticate")
			p := parseChallenge(t, ch)
			if p["resource_metadata"] != metaURL {
				t.Errorf("WWW-Authenticate %q: resource_metadata want %q", ch, metaURL)
			}
			if sc := strings.Fields(p["scope"]); !slices.Contains(sc, "mcp:use") || !slices.Contains(sc, "mcp:write") {
				t.Errorf("WWW-Authenticate %q: scope lacks mcp:use or mcp:write", ch)
			}
			if p["error"] != tt.err {
				t.Errorf("WWW-Authenticate %q: error %q, want %q", ch, p["error"], tt.err)
			}
		})
	}
	if n := g.workers(); n != 0 {
		t.Errorf("gemgate has %d worker processes after %d refused requests, want 0", n, len(tests))
	}
	if evs := g.logEvents("session opened"); len(evs) != 0 {
		t.Errorf("a bad token opened a session: %v", evs)
	}
	logs := g.logs.String()
	for _, tok := range tokens {
		if len(tok) > 16 && strings.Contains(logs, tok) {
			t.Errorf("a presented token appears in gemgate's log: %.40s...", tok)
		}
	}
	// The control: the good token from the same issuer does open a session.
	if sid := (rawClient{t: t, url: g.URL, token: valid}).initialize(); sid == "" {
		t.Fatal("no session for the valid token")
	}
	if n := g.workers(); n != 1 {
		t.Errorf("gemgate has %d workers after one good initialize, want 1", n)
	}
}

// TestWorkerKilledMidCall: a worker killed while calls run on it answers each pending call
// with a JSON-RPC error bearing that call's own id. With worker_per: session the session ends
// with its worker (404 after) and another user's session is untouched; with worker_per: user
// the two sessions of alice share the worker, both calls fail, both sessions stay, and the
// next call starts a fresh worker.
func TestWorkerKilledMidCall(t *testing.T) {
	t.Parallel()
	for _, perSession := range []bool{true, false} {
		name := map[bool]string{true: "per_session", false: "per_user"}[perSession]
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			var flags []string
			if perSession {
				flags = []string{"--worker-per", "session"}
			}
			g := startDev(t, flags...)
			c := rawClient{t: t, url: g.URL, token: g.Tokens["alice"]}
			sid := c.initialize()
			other := rawClient{t: t, url: g.URL, token: g.Tokens["alice"]}
			otherSid := other.initialize()
			pid := g.workerPID(t, sid)
			if !slices.Contains(childPIDs(g.cmd.Process.Pid), pid) {
				t.Fatalf("worker pid %d of session %s is not a child of gemgate (children %v)", pid, sid, childPIDs(g.cmd.Process.Pid))
			}

			const id = `"call-⚡-12345678901234567890"` // a string id the gateway must give back byte for byte
			slow := func(id string) []byte {
				return []byte(`{"jsonrpc":"2.0","id":` + id + `,"method":"tools/call","params":{"name":"slow","arguments":{"seconds":30}}}`)
			}
			got := make(chan rawResp, 1)
			go func() { got <- c.do("POST", sid, slow(id), nil) }()
			otherGot := make(chan rawResp, 1)
			if !perSession { // the other session's call runs on the same worker
				go func() { otherGot <- other.do("POST", otherSid, slow(`7`), nil) }()
			}
			calls := 1
			if !perSession {
				calls = 2
			}
			puWaitStarted(t, g, "slow: started", calls, 20*time.Second) // the calls are running at the worker
			if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
				t.Fatalf("kill worker: %v", err)
			}
			answered := func(ch chan rawResp, id string) {
				t.Helper()
				var r rawResp
				select {
				case r = <-ch:
				case <-time.After(10 * time.Second):
					t.Fatalf("no answer to %s within 10s of the worker's death", id)
				}
				msgs := r.messages(t)
				if len(msgs) == 0 {
					t.Fatalf("no JSON-RPC message in the answer: status %d, body %s", r.status, r.body)
				}
				if last := msgs[len(msgs)-1]; string(last.ID) != id || last.Error == nil {
					t.Errorf("answer %s: want a JSON-RPC error with id %s", r.body, id)
				}
			}
			answered(got, id)
			if !perSession {
				answered(otherGot, `7`)
			}
			waitGone(t, pid)

			if perSession {
				deadline := time.Now().Add(5 * time.Second)
				for {
					r := c.do("POST", sid, []byte(`{"jsonrpc":"2.0","id":2,"method":"tools/list"}`), nil)
					if r.status == http.StatusNotFound {
						break
					}
					if time.Now().After(deadline) {
						t.Fatalf("request on the dead worker's session: status %d, want 404; body %s", r.status, r.body)
					}
					time.Sleep(50 * time.Millisecond)
				}
			} else if r := c.do("POST", sid, []byte(`{"jsonrpc":"2.0","id":2,"method":"tools/list"}`), nil); r.status != http.StatusOK {
				t.Errorf("request on the session after its worker died: status %d, body %s; want a fresh worker", r.status, r.body)
			}
			r := other.do("POST", otherSid, []byte(`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"echo","arguments":{"text":"still here"}}}`), nil)
			if r.status != http.StatusOK || !strings.Contains(string(r.body), "still here") {
				t.Errorf("other session's echo: status %d, body %s", r.status, r.body)
			}
			if n := g.workers(); n != 1 {
				t.Errorf("gemgate has %d workers, want 1", n)
			}
			if kids := childPIDs(g.cmd.Process.Pid); slices.Contains(kids, pid) {
				t.Errorf("the dead worker %d is still among gemgate's children %v", pid, kids)
			}
		})
	}
}

func TestWorkerChatterIsSkipped(t *testing.T) {
	t.Parallel()
	g := startDev(t, "--worker", "command", "--worker-command", "env GEMGATE_DEMO_CHATTER=1 "+gemgateBin+" worker demo")
	cs := connect(t, g.URL, g.Tokens["alice"], nil)
	if names := toolNames(t, cs); len(names) == 0 {
		t.Fatal("tools/list is empty")
	}
	for i := range 5 {
		want := fmt.Sprintf("message %d between chatter", i)
		if got := text(callTool(t, cs, "echo", map[string]any{"text": want})); got != want {
			t.Errorf("echo = %q, want %q", got, want)
		}
	}
	if !strings.Contains(g.logs.String(), "chatter: ") {
		t.Errorf("gemgate logged no skipped chatter line; was GEMGATE_DEMO_CHATTER set?\nlogs:\n%s", g.logs)
	}
}
