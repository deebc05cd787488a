package gateway

import (
	"context"
	"encoding/json"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/gemgate/gemgate/jsonrpc"
)

var sessionIDPattern = regexp.MustCompile(`^[0-9a-f]{32}$`)

func TestInitializeOpensSession(t *testing.T) {
	f := newFixture(t)
	c := f.client("alice-rw")
	r := c.open()
	if !sessionIDPattern.MatchString(c.session) {
		t.Errorf("session id %q is not 32 hex characters", c.session)
	}
	if got := r.contentType(); got != "application/json" {
		t.Errorf("initialize Content-Type = %q", got)
	}
	if string(r.only(t).ID) != "1" {
		t.Errorf("initialize answer id = %s, want 1", r.only(t).ID)
	}
	// The id is set on the InitializeResult only.
	for _, r := range []reply{
		c.rpc("2", "tools/list", map[string]any{}),
		c.rpc("", "notifications/initialized", map[string]any{}),
		c.callTool("3", "echo", map[string]any{"text": "hi"}),
	} {
		if h := r.header.Get(headerSessionID); h != "" {
			t.Errorf("status %d answer carries Mcp-Session-Id %q", r.status, h)
		}
	}
	other := f.client("alice-rw")
	other.open()
	if other.session == c.session {
		t.Error("two sessions got the same id")
	}
	if got := f.gw.Sessions(); got != 2 {
		t.Errorf("Sessions() = %d, want 2", got)
	}
}

func TestSessionGates(t *testing.T) {
	f := newFixture(t)
	alice := f.client("alice-rw")
	alice.open()
	const ping = `{"jsonrpc":"2.0","id":5,"method":"ping"}`

	tests := []struct {
		name    string
		method  string
		session string
		body    string
		want    int
	}{
		{"POST without session", http.MethodPost, "", ping, http.StatusBadRequest},
		{"GET without session", http.MethodGet, "", "", http.StatusBadRequest},
		{"DELETE without session", http.MethodDelete, "", "", http.StatusBadRequest},
		{"POST unknown session", http.MethodPost, "00000000000000000000000000000000", ping, http.StatusNotFound},
		{"GET unknown session", http.MethodGet, "00000000000000000000000000000000", "", http.StatusNotFound},
		{"DELETE unknown session", http.MethodDelete, "00000000000000000000000000000000", "", http.StatusNotFound},
		{"POST with session", http.MethodPost, alice.session, ping, http.StatusOK},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := &client{f: f, token: "alice-rw", session: tt.session}
			r := c.refused(t, tt.name, tt.method, tt.body)
			if r.status != tt.want {
				t.Fatalf("status %d, want %d (body %q)", r.status, tt.want, r.body)
			}
			if tt.want == http.StatusOK {
				return
			}
			e := rpcError(t, r.only(t))
			if e.Code != jsonrpc.CodeInvalidRequest {
				t.Errorf("error code %d, want %d", e.Code, jsonrpc.CodeInvalidRequest)
			}
			if tt.body != "" && string(r.only(t).ID) != "5" {
				t.Errorf("error id %s, want the request's 5", r.only(t).ID)
			}
		})
	}
}

func TestOtherSubjectGetsNotFound(t *testing.T) {
	f := newFixture(t)
	alice := f.client("alice-rw")
	alice.open()
	bob := &client{f: f, token: "bob-rw", session: alice.session, version: alice.version}

	const marker = "bob-must-not-reach-alice"
	for _, method := range []string{http.MethodPost, http.MethodGet, http.MethodDelete} {
		body := ""
		if method == http.MethodPost {
			body = rpcBody("9", "tools/call", map[string]any{"name": "echo", "arguments": map[string]any{"text": marker}})
		}
		if r := bob.refused(t, method+" with another subject's token", method, body); r.status != http.StatusNotFound {
			t.Errorf("%s with another subject's token: status %d, want 404", method, r.status)
		}
	}
	// The session survived.
	if r := alice.callTool("10", "echo", map[string]any{"text": "still here"}); toolText(t, r.only(t)) != "still here" {
		t.Error("alice's session was disturbed")
	}
	seen := workerBound(t, f)
	if !strings.Contains(seen, "still here") {
		t.Fatal("the worker trace does not show alice's call; the check below would prove nothing")
	}
	if strings.Contains(seen, marker) {
		t.Error("bob's request reached alice's worker")
	}
}

// workerBound is every traced line written to a worker.
func workerBound(t *testing.T, f *fixture) string {
	var b strings.Builder
	for _, rec := range f.log.records(t) {
		if rec["direction"] == "to_worker" {
			b.WriteString(rec["body"].(string))
			b.WriteByte('\n')
		}
	}
	return b.String()
}

func TestNotificationsAndResponsesGet202(t *testing.T) {
	f := newFixture(t)
	c := f.client("alice-rw")
	c.open()
	for name, body := range map[string]string{
		"notification":           `{"jsonrpc":"2.0","method":"notifications/roots/list_changed"}`,
		"cancel of nothing":      `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":42}}`,
		"response":               `{"jsonrpc":"2.0","id":"gemgate-999","result":{}}`,
		"error response":         `{"jsonrpc":"2.0","id":"gemgate-998","error":{"code":-1,"message":"no"}}`,
		"response to unknown id": `{"jsonrpc":"2.0","id":17,"result":{}}`,
	} {
		r := c.post(body)
		if r.status != http.StatusAccepted || len(r.body) != 0 {
			t.Errorf("%s: status %d body %q, want 202 and no body", name, r.status, r.body)
		}
	}
}

func TestOtherVerbsGet405(t *testing.T) {
	f := newFixture(t)
	c := f.client("alice-rw")
	for _, m := range []string{http.MethodPut, http.MethodPatch, "OPTIONS"} {
		r := c.request(context.Background(), m, "")
		if r.status != http.StatusMethodNotAllowed {
			t.Errorf("%s: status %d, want 405", m, r.status)
		}
		if got := r.header.Get("Allow"); got != "GET, POST, DELETE" {
			t.Errorf("%s: Allow = %q", m, got)
		}
	}
}

// On a loopback listener a browser page on any other loopback port (a dev server, another
// tool, a page an attacker got opened locally) is foreign: only the gateway's own origin, in
// its loopback spellings, and allowed_origins pass.
func TestOriginGate(t *testing.T) {
	const ping = `{"jsonrpc":"2.0","id":1,"method":"ping"}` // without a session: 400 once past the gate
	const public = "http://127.0.0.1:8808/mcp"
	tests := []struct {
		name     string
		loopback bool
		origin   string
		want     int
	}{
		{"absent", false, "", http.StatusBadRequest},
		{"foreign", false, "https://evil.example", http.StatusForbidden},
		{"listed", false, "https://app.example", http.StatusBadRequest},
		{"listed with another port", false, "https://app.example:8443", http.StatusForbidden},
		{"null", false, "null", http.StatusForbidden},
		{"loopback not allowed", false, "http://localhost:3000", http.StatusForbidden},
		{"own origin off loopback", false, "http://127.0.0.1:8808", http.StatusForbidden},
		{"own origin", true, "http://127.0.0.1:8808", http.StatusBadRequest},
		{"own port as localhost", true, "http://localhost:8808", http.StatusBadRequest},
		{"own port as LOCALHOST", true, "http://LOCALHOST:8808", http.StatusBadRequest},
		{"own port as ::1", true, "http://[::1]:8808", http.StatusBadRequest},
		{"another loopback port", true, "http://localhost:3000", http.StatusForbidden},
		{"inspector's port", true, "http://127.0.0.1:6274", http.StatusForbidden},
		{"another loopback port v6", true, "http://[::1]:6274", http.StatusForbidden},
		{"own port, other scheme", true, "https://localhost:8808", http.StatusForbidden},
		{"own port, default port", true, "http://localhost", http.StatusForbidden},
		{"other loopback address", true, "http://127.0.0.2:8808", http.StatusForbidden},
		{"foreign with loopback allowed", true, "https://localhost.evil.example", http.StatusForbidden},
		{"listed with loopback allowed", true, "https://app.example", http.StatusBadRequest},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t, func(o *Options) {
				o.PublicURL = public
				o.AllowedOrigins = []string{"https://app.example"}
				o.AllowLoopbackOrigins = tt.loopback
			})
			r := f.client("alice-rw").post(ping, "Origin", tt.origin)
			if r.status != tt.want {
				t.Errorf("status %d, want %d (body %q)", r.status, tt.want, r.body)
			}
		})
	}
}

func TestProtocolVersionGate(t *testing.T) {
	f := newFixture(t)
	c := f.client("alice-rw")
	c.open()
	for _, tt := range []struct {
		version string
		want    int
	}{
		{"", http.StatusOK}, // absent: 2025-03-26 rules
		{"2025-06-18", http.StatusOK},
		{"2025-11-25", http.StatusOK},
		{"2025-03-26", http.StatusOK},
		{"2024-11-05", http.StatusBadRequest},
		{"garbage", http.StatusBadRequest},
	} {
		c.version = tt.version
		r := c.rpc("7", "ping", map[string]any{})
		if r.status != tt.want {
			t.Errorf("version %q: status %d, want %d", tt.version, r.status, tt.want)
		}
		if tt.want == http.StatusBadRequest {
			if e := rpcError(t, r.only(t)); e.Code != jsonrpc.CodeInvalidRequest || string(r.only(t).ID) != "7" {
				t.Errorf("version %q: error %+v id %s", tt.version, e, r.only(t).ID)
			}
		}
	}
	c.version = "1999-01-01"
	if r := c.refusedGET(t, "GET with an unsupported version"); r.status != http.StatusBadRequest {
		t.Errorf("GET with an unsupported version: %d, want 400", r.status)
	}
}

func TestBadBodies(t *testing.T) {
	f := newFixture(t, func(o *Options) { o.MaxBodyBytes = 1024 })
	c := f.client("alice-rw")
	c.open()
	tests := []struct {
		name   string
		body   string
		status int
		code   int64
	}{
		{"malformed", `{"jsonrpc":"2.0","id":1,"method":`, http.StatusBadRequest, jsonrpc.CodeParseError},
		{"not an object", `"hello"`, http.StatusBadRequest, jsonrpc.CodeParseError},
		{"empty", ` `, http.StatusBadRequest, jsonrpc.CodeParseError},
		{"batch", `[{"jsonrpc":"2.0","id":1,"method":"ping"}]`, http.StatusBadRequest, jsonrpc.CodeInvalidRequest},
		{"wrong jsonrpc", `{"jsonrpc":"1.0","id":1,"method":"ping"}`, http.StatusBadRequest, jsonrpc.CodeInvalidRequest},
		{"too big", `{"jsonrpc":"2.0","id":1,"method":"ping","params":{"pad":"` + strings.Repeat("x", 2048) + `"}}`,
			http.StatusRequestEntityTooLarge, jsonrpc.CodeInvalidRequest},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := c.post(tt.body)
			if r.status != tt.status {
				t.Fatalf("status %d, want %d (body %q)", r.status, tt.status, r.body)
			}
			if e := rpcError(t, r.only(t)); e.Code != tt.code {
				t.Errorf("code %d, want %d", e.Code, tt.code)
			}
		})
	}
	// None of it hurt the session.
	if r := c.rpc("2", "ping", map[string]any{}); r.status != http.StatusOK {
		t.Errorf("ping after bad bodies: %d", r.status)
	}
}

func TestServerDiscoverWithoutSession(t *testing.T) {
	f := newFixture(t)
	r := f.client("alice-rw").rpc(`"d1"`, "server/discover", map[string]any{})
	if r.status != http.StatusOK {
		t.Fatalf("status %d", r.status)
	}
	if h := r.header.Get(headerSessionID); h != "" {
		t.Errorf("server/discover minted a session id %q", h)
	}
	m := r.only(t)
	if e := rpcError(t, m); e.Code != jsonrpc.CodeMethodNotFound || string(m.ID) != `"d1"` {
		t.Errorf("got %+v id %s, want -32601 with id \"d1\"", e, m.ID)
	}
	if n := f.gw.Sessions(); n != 0 {
		t.Errorf("%d sessions after server/discover", n)
	}
}

func TestInitializeNegotiatesVersion(t *testing.T) {
	f := newFixture(t)
	for _, tt := range []struct{ asked, want string }{
		{"2025-06-18", "2025-06-18"},
		{"2025-03-26", "2025-03-26"},
		{"2099-01-01", supportedVersions[0]},
		{"", supportedVersions[0]},
	} {
		r := f.client("alice-rw").rpc("1", "initialize", initParams(tt.asked))
		var res struct {
			ProtocolVersion string `json:"protocolVersion"`
		}
		if err := json.Unmarshal(r.only(t).Result, &res); err != nil || r.status != http.StatusOK {
			t.Fatalf("asked %q: status %d, %s", tt.asked, r.status, r.body)
		}
		if res.ProtocolVersion != tt.want {
			t.Errorf("asked %q: negotiated %q, want %q", tt.asked, res.ProtocolVersion, tt.want)
		}
	}
}

func TestInitializeWithoutParamsIsRefused(t *testing.T) {
	f := newFixture(t)
	r := f.client("alice-rw").post(`{"jsonrpc":"2.0","id":1,"method":"initialize"}`)
	if e := rpcError(t, r.only(t)); e.Code != jsonrpc.CodeInvalidParams || r.header.Get(headerSessionID) != "" {
		t.Errorf("got %+v, session %q", e, r.header.Get(headerSessionID))
	}
}

func TestWorkerWithUnsupportedVersionLeavesNothing(t *testing.T) {
	f := newFixture(t, func(o *Options) { o.Workers = &testLauncher{mode: "badversion"} })
	r := f.client("alice-rw").rpc("1", "initialize", initParams("2025-06-18"))
	if h := r.header.Get(headerSessionID); h != "" {
		t.Errorf("a session id %q was minted", h)
	}
	if e := rpcError(t, r.only(t)); e.Code != jsonrpc.CodeInternalError || string(r.only(t).ID) != "1" {
		t.Errorf("got %+v id %s", e, r.only(t).ID)
	}
	if n := f.gw.Sessions(); n != 0 {
		t.Errorf("%d sessions left", n)
	}
	if pids := workerPids(t, "badversion"); len(pids) != 0 {
		t.Errorf("worker processes left: %v", pids)
	}
}

func TestSlowInitTimesOut(t *testing.T) {
	f := newFixture(t, func(o *Options) {
		o.Workers = &testLauncher{mode: "slowinit"}
		o.InitTimeout = 200 * time.Millisecond
	})
	r := f.client("alice-rw").rpc("1", "initialize", initParams("2025-06-18"))
	if e := rpcError(t, r.only(t)); e.Code != jsonrpc.CodeInternalError || r.header.Get(headerSessionID) != "" {
		t.Errorf("got %+v, session %q", e, r.header.Get(headerSessionID))
	}
	if pids := workerPids(t, "slowinit"); len(pids) != 0 {
		t.Errorf("worker processes left: %v", pids)
	}
}

func TestDeleteEndsSessionAndWorker(t *testing.T) {
	f := newFixture(t)
	c := f.client("alice-rw")
	c.open()
	pid := c.sessionObj().member.WorkerPid()
	if r := c.request(context.Background(), http.MethodDelete, ""); r.status != http.StatusOK {
		t.Fatalf("DELETE: %d", r.status)
	}
	if alive(pid) {
		t.Errorf("worker %d still running after DELETE", pid)
	}
	if r := c.rpc("2", "ping", map[string]any{}); r.status != http.StatusNotFound {
		t.Errorf("POST after DELETE: %d, want 404", r.status)
	}
	if r := c.request(context.Background(), http.MethodDelete, ""); r.status != http.StatusNotFound {
		t.Errorf("second DELETE: %d, want 404", r.status)
	}
}

func TestWorkerCrashEndsSession(t *testing.T) {
	f := newFixture(t, func(o *Options) { o.Workers = &testLauncher{mode: "crashy"} })
	c := f.client("alice-rw")
	c.open()
	r := c.callTool(`"big-1"`, "anything", map[string]any{})
	m := r.only(t)
	if e := rpcError(t, m); e.Code != jsonrpc.CodeInternalError || string(m.ID) != `"big-1"` {
		t.Errorf("got %+v id %s, want -32603 with the caller's id", e, m.ID)
	}
	eventually(t, 5*time.Second, "the session to end", func() bool { return f.gw.Sessions() == 0 })
	if r := c.rpc("2", "ping", map[string]any{}); r.status != http.StatusNotFound {
		t.Errorf("POST after the worker died: %d, want 404", r.status)
	}
}

// The origin a request was addressed to counts as the gateway's own when it is a loopback
// name, as through a local proxy on another port; never a name DNS rebinding could send.
func TestOriginAddressedTo(t *testing.T) {
	f := newFixture(t, func(o *Options) {
		o.PublicURL = "http://127.0.0.1:8808/mcp"
		o.AllowLoopbackOrigins = true
	})
	tests := []struct {
		origin, host string
		want         bool
	}{
		{"http://localhost:9999", "localhost:9999", true},
		{"http://127.0.0.1:9999", "127.0.0.1:9999", true},
		{"http://[::1]:9999", "[::1]:9999", true},
		{"http://localhost:3000", "localhost:9999", false},
		{"http://evil.example.com", "evil.example.com", false},
		{"http://evil.example.com:8808", "evil.example.com:8808", false},
		{"http://localhost:9999/x", "localhost:9999", false},
	}
	for _, tt := range tests {
		if got := f.gw.originAllowed(tt.origin, tt.host); got != tt.want {
			t.Errorf("originAllowed(%s, Host %s) = %v, want %v", tt.origin, tt.host, got, tt.want)
		}
	}
}
