package test

import (
	"net/http"
	"strings"
	"testing"
	"time"
)

// A live session id is never a credential: every request on it needs its own valid token of
// the session's subject. Each refused request must get a 401 challenge and reach no worker,
// and must leave the session as it was (a DELETE without a token ends nothing).
func TestSessionIsNeverAuthentication(t *testing.T) {
	t.Parallel()
	iss := newTestIssuer(t)
	g := startServe(t, "--issuer", iss.URL(), "--worker", "command", "--worker-command", workerBin+" worker demo",
		"--trace-messages")
	good := iss.claims(g.URL, "carol", "mcp:use mcp:write")
	carol := rawClient{t: t, url: g.URL, token: iss.mint(good)}
	sid := carol.initialize()
	if r := carol.do("POST", sid, []byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"write_note","arguments":{"name":"diary","text":"carol only"}}}`), nil); r.status != http.StatusOK {
		t.Fatalf("carol's write_note with her token: status %d, body %s", r.status, r.body)
	}

	past := time.Now().Add(-2 * time.Hour)
	tokens := []struct{ name, token string }{
		{"no token", ""},
		{"expired token of the same subject", iss.mint(with(good, func(c map[string]any) {
			c["iat"], c["nbf"], c["exp"] = past.Unix(), past.Unix(), past.Add(time.Hour).Unix()
		}))},
		{"forged token of the same subject", signRS256(iss.other, map[string]any{"typ": "JWT", "kid": testKID}, good)},
		{"token for another audience", iss.mint(with(good, func(c map[string]any) { c["aud"] = "https://elsewhere.example/mcp" }))},
		{"not a JWT", "not-a-jwt"},
	}
	const marker = "SESSION-IS-NOT-AUTH"
	for _, tk := range tokens {
		c := rawClient{t: t, url: g.URL, token: tk.token}
		for _, a := range []struct{ method, body string }{
			{"POST", `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"write_note","arguments":{"name":"diary","text":"` + marker + `"}}}`},
			{"POST", `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1,"reason":"` + marker + `"}}`},
			{"GET", ""},
			{"DELETE", ""},
		} {
			var body []byte
			if a.body != "" {
				body = []byte(a.body)
			}
			r := c.do(a.method, sid, body, nil)
			if r.status != http.StatusUnauthorized {
				t.Errorf("%s: %s with carol's live session: status %d, want 401 (body %s)", tk.name, a.method, r.status, r.body)
				continue
			}
			ch := parseChallenge(t, r.header.Get("WWW-Authenticate"))
			if ch["resource_metadata"] == "" {
				t.Errorf("%s: %s: challenge %q names no resource_metadata", tk.name, a.method, r.header.Get("WWW-Authenticate"))
			}
			if wantErr := tk.token != ""; wantErr != (ch["error"] == "invalid_token") {
				t.Errorf("%s: %s: challenge error %q", tk.name, a.method, ch["error"])
			}
		}
	}

	// The session lives on, untouched: carol's note is as she wrote it.
	r := carol.do("POST", sid, []byte(`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"read_note","arguments":{"name":"diary"}}}`), nil)
	if r.status != http.StatusOK || !strings.Contains(string(r.body), "carol only") || strings.Contains(string(r.body), marker) {
		t.Fatalf("carol's read_note afterwards: status %d, body %s", r.status, r.body)
	}
	// The worker leg of the trace shows carol's own calls and none of the refused ones.
	noneReachedTheWorker(t, g, marker)
}

// noneReachedTheWorker fails if marker appears in any message of the trace's worker leg, and
// if the trace has no worker leg at all: an empty scan would prove nothing.
func noneReachedTheWorker(t *testing.T, g *gemgate, marker string) {
	t.Helper()
	workerLeg := 0
	for _, ev := range g.logEvents("trace") {
		d := ev["direction"]
		if d != "to_worker" && d != "from_worker" {
			continue
		}
		workerLeg++
		if body, _ := ev["body"].(string); strings.Contains(body, marker) {
			t.Errorf("a refused request reached the worker: %v", ev)
		}
	}
	if workerLeg == 0 {
		t.Fatal("the trace shows no message to or from the worker, so it proves nothing; has the trace format changed?")
	}
}
