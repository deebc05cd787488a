package test

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"gopkg.in/yaml.v3"
)

// The GemStone worker's suite runs against a fake stone (worker/gemstone/internal/fakestone,
// built here as $GEMSTONE/bin/topaz and gslist) unless GEMGATE_TEST_GEMSTONE names a real
// stone; docs/gemstone.md lists what that stone must hold and the variables:
//
//	GEMGATE_TEST_GEMSTONE             the stone's name (switches the suite to the real stone)
//	GEMGATE_TEST_GEMSTONE_HOME        $GEMSTONE, the product directory (default: $GEMSTONE)
//	GEMGATE_TEST_GEMSTONE_INI         the service account's 0600 topaz ini
//	GEMGATE_TEST_GEMSTONE_GLOBAL_DIR  GEMSTONE_GLOBAL_DIR (default: found with gslist)
//	GEMGATE_TEST_GEMSTONE_KEYS        a command run with an issuer's JWKS URL that registers its
//	                                  keys with the stone (worker/gemstone/scripts/gemstone-jwt-keys)
//	GEMGATE_TEST_GEMSTONE_IDLE        how long TestGemStoneStoneChecks idles under write load (default 2m)
//	GEMGATE_TEST_REQUIRE_GEMSTONE=1        a run without GEMGATE_TEST_GEMSTONE fails instead of skipping
//
// Fault modes (a crash, a stall, #51438 corruption) exist only in the fake and are skipped on a
// real stone.
func realStone() bool { return os.Getenv("GEMGATE_TEST_GEMSTONE") != "" }

// fakeStone lays out a fake GemStone for one test and answers gemgate's flags for it. cfg
// changes the stone (see the fake's Config); alice is a JWT user accepting audience gemstone.
func fakeStone(t *testing.T, cfg map[string]any) []string {
	t.Helper()
	if realStone() {
		return realStoneFlags(t)
	}
	root := t.TempDir()
	home, global, ini := filepath.Join(root, "gemstone"), filepath.Join(root, "global"), filepath.Join(root, "service.ini")
	bin := filepath.Join(home, "bin")
	for _, d := range []string{bin, filepath.Join(global, "locks")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	// The fake finds its configuration from its own path, so each stone gets a copy.
	fake, err := os.ReadFile(buildOnce(t, "fakestone", "../worker/gemstone/internal/fakestone"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(bin, "topaz"), fake, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Link(filepath.Join(bin, "topaz"), filepath.Join(bin, "gslist")); err != nil {
		t.Fatal(err)
	}
	c := map[string]any{"version": "3.7.5", "service_user": "gemgate_svc", "service_password": "pw", "server": "0.8.0",
		"users": map[string]any{
			"alice": map[string]any{"audiences": []string{"gemstone"}, "issuers": []string{"*"}},
			"bob":   map[string]any{"audiences": []string{"gemstone"}, "issuers": []string{"*"}},
		}}
	for k, v := range cfg {
		c[k] = v
	}
	writeJSONFile(t, filepath.Join(home, "fakestone.json"), c)
	if err := os.WriteFile(filepath.Join(home, "version.txt"), []byte(fmt.Sprintf("GemStone/S 64 Bit\n%s Build: 64bit-fakestone\n", c["version"])), 0o644); err != nil {
		t.Fatal(err)
	}
	for name, typ := range map[string]string{"gs64stone": "Stone", "gs64ldi": "Netldi"} {
		writeJSONFile(t, filepath.Join(global, "locks", name+"..LCK"), map[string]any{"type": typ, "version": c["version"], "pid": 4242, "port": 50377})
	}
	if err := os.WriteFile(ini, []byte("set gemstone gs64stone\nset user gemgate_svc\nset password pw\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return []string{"--worker", "gemstone", "--gemstone-home", home, "--gemstone-global-dir", global, "--gemstone-service-ini", ini}
}

func realStoneFlags(t *testing.T) []string {
	home := os.Getenv("GEMGATE_TEST_GEMSTONE_HOME")
	if home == "" {
		home = os.Getenv("GEMSTONE")
	}
	f := []string{"--worker", "gemstone", "--gemstone-home", home, "--gemstone-stone", os.Getenv("GEMGATE_TEST_GEMSTONE"),
		"--gemstone-service-ini", os.Getenv("GEMGATE_TEST_GEMSTONE_INI")}
	if d := os.Getenv("GEMGATE_TEST_GEMSTONE_GLOBAL_DIR"); d != "" {
		f = append(f, "--gemstone-global-dir", d)
	}
	return f
}

// trustIssuer registers an issuer's keys with a real stone; the fake trusts every key.
func trustIssuer(t *testing.T, issuer string) {
	t.Helper()
	cmd := os.Getenv("GEMGATE_TEST_GEMSTONE_KEYS")
	if !realStone() || cmd == "" {
		return
	}
	if out, err := exec.Command(cmd, strings.TrimSuffix(issuer, "/")+"/jwks").CombinedOutput(); err != nil {
		t.Fatalf("registering the issuer's keys with the stone: %v\n%s", err, out)
	}
}

func needFake(t *testing.T, what string) {
	if realStone() {
		t.Skipf("%s is a fault of the fake stone; not run against the real stone %s", what, os.Getenv("GEMGATE_TEST_GEMSTONE"))
	}
}

func writeJSONFile(t *testing.T, path string, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

func startGemStoneDev(t *testing.T, cfg map[string]any, flags ...string) *gemgate {
	t.Helper()
	g := startDev(t, append(append(fakeStone(t, cfg), "--worker-credential", "exchange"), flags...)...)
	trustIssuer(t, g.Issuer)
	return g
}

// presetTools is policy/presets/gemstone.yaml's read_only_tools.
func presetTools(t *testing.T) []string {
	b, err := os.ReadFile("../policy/presets/gemstone.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var p struct {
		Tools []string `yaml:"read_only_tools"`
	}
	if err := yaml.Unmarshal(b, &p); err != nil {
		t.Fatal(err)
	}
	slices.Sort(p.Tools)
	return p.Tools
}

// TestGemStoneRealStone says whether the GemStone suite ran against a real stone, and, when it
// did, checks that it is one: gemgate check finds every GemStone part in order, and a
// session's status names that stone. GEMGATE_TEST_REQUIRE_GEMSTONE=1 makes a run without a stone a
// failure (for CI with a stone), instead of a skip that says why.
func TestGemStoneRealStone(t *testing.T) {
	t.Parallel()
	if !realStone() {
		why := "GEMGATE_TEST_GEMSTONE is not set, so no real stone was named and the GemStone tests ran against the fake stone (worker/gemstone/internal/fakestone) only; " +
			"set it and the GEMGATE_TEST_GEMSTONE_* variables of docs/gemstone.md (\"Acceptance run\") to run them against a stone"
		if os.Getenv("GEMGATE_TEST_REQUIRE_GEMSTONE") == "1" {
			t.Fatal("GEMGATE_TEST_REQUIRE_GEMSTONE=1: " + why)
		}
		t.Skip(why + "; GEMGATE_TEST_REQUIRE_GEMSTONE=1 makes this a failure")
	}
	stoneName := os.Getenv("GEMGATE_TEST_GEMSTONE")
	cmd := exec.Command(gemgateBin, append([]string{"check", "--auth", "none", "--listen", "127.0.0.1:0", "--metrics-listen", "off", "--worker-credential", "exchange"}, realStoneFlags(t)...)...)
	out, _ := cmd.CombinedOutput()
	for _, line := range strings.Split(string(out), "\n") {
		if strings.HasPrefix(line, "PROBLEM  gemstone:") {
			t.Errorf("gemgate check against %s: %s", stoneName, line)
		}
	}
	for _, w := range []string{"OK       gemstone: topaz found", "is running", "OK       gemstone: GemStone 3.", "OK       gemstone: gemstone_home is GemStone", "OK       gemstone: netldi"} {
		if !strings.Contains(string(out), w) {
			t.Errorf("gemgate check against %s lacks %q:\n%s", stoneName, w, out)
		}
	}
	g := startGemStoneDev(t, nil)
	if got := text(callTool(t, connect(t, g.URL, g.Tokens["alice"], nil), "status", nil)); !strings.Contains(got, stoneName) || !strings.Contains(got, "alice") {
		t.Errorf("status on %s = %q, want the stone's name and alice", stoneName, got)
	}
}

// TestGemStoneStoneChecks are the checks only a stone can settle, run against the fake (which
// springs each trap when the relay lacks the fix) and against a real stone when one is named:
//   - an idle session under write load from another session survives (SigAbort: the relay is
//     #transactionless, so it holds no commit record while it waits in a read);
//   - the user's session idle under write load, holding uncommitted work in its transaction
//     view: it either keeps that work, or, terminated by the stone, its next call gets an
//     error naming the loss and the session ends (404); never a silent fresh login
//     (usersViewUnderWriteLoad);
//   - a 1 MiB request line arrives whole (the relay reads without the line editor);
//   - a non-ASCII compile_method round-trips (set sourcestringclass String; mcp_server 0.6.1+);
//   - the user's gem is forked with gemstone_gem_config (the NRS body reaches gemnetobject);
//   - both gems carry the names System cacheName: gave them.
//
// docs/gemstone.md ("Open points to verify on a real stone") lists what this run does not
// settle: the text of a fatal-band GciError as the relay's description reads it, what
// isCallInProgress answers after a wait that raised, and a read-only session's commit refused
// with 2249 on a server without a read-only mode.
//
// On a real stone the idle period is GEMGATE_TEST_GEMSTONE_IDLE (default 2m), which must be
// longer than the stone's STN_GEM_ABORT_TIMEOUT_SECONDS.
func TestGemStoneStoneChecks(t *testing.T) {
	t.Parallel()
	g := startGemStoneDev(t, map[string]any{"write_load": true, "unicode16": true}, "--streamless-idle-timeout", "30m", "--idle-timeout", "30m",
		"--gemstone-gem-config", "GEM_TEMPOBJ_CACHE_SIZE=900000;")
	t.Run("idle under write load", func(t *testing.T) {
		quiet := connect(t, g.URL, g.Tokens["alice"], nil)
		callTool(t, quiet, "status", nil)
		idle := stoneIdle(t) // 0 on the fake, which terminates a session holding a commit record at once
		writeFor(t, connect(t, g.URL, g.Tokens["alice"], nil), idle)
		if got := text(callTool(t, quiet, "status", nil)); !strings.Contains(got, "alice") {
			t.Errorf("after %v idle under write load, status = %q", idle, got)
		}
	})
	t.Run("the user's session idle under write load", usersViewUnderWriteLoad)
	cs := connect(t, g.URL, g.Tokens["alice"], nil)
	t.Run("1 MiB line", func(t *testing.T) {
		lit := "'" + strings.Repeat("m", 1<<20) + "'"
		if got := text(callTool(t, cs, "execute_code", map[string]any{"code": lit})); got != lit {
			t.Errorf("a 1 MiB literal came back as %d bytes", len(got))
		}
	})
	t.Run("gem config and names", func(t *testing.T) {
		if got := text(callTool(t, cs, "execute_code", map[string]any{"code": "System configurationAt: #GemTempObjCacheSize"})); !strings.Contains(got, "900000") {
			t.Errorf("the user's gem's GemTempObjCacheSize = %q, want gemstone_gem_config's 900000", got)
		}
		names := text(callTool(t, cs, "execute_code", map[string]any{"code": "System cacheStatisticsForAllSlots collect: [:each | each first]"}))
		for _, w := range []string{"'gemgate-relay:alice'", "'gemgate:alice'"} {
			if !strings.Contains(names, w) {
				t.Errorf("the gems' names %q lack %s", names, w)
			}
		}
	})
	t.Run("non-ASCII compile_method", func(t *testing.T) {
		class := "GemgateProbe"
		callTool(t, cs, "compile_class_definition", map[string]any{"source": "Object subclass: #" + class +
			" instVarNames: #() classVars: #() classInstVars: #() poolDictionaries: #() inDictionary: UserGlobals"})
		if realStone() {
			t.Cleanup(func() { callTool(t, cs, "delete_class", map[string]any{"className": class}) })
		}
		literal := "'héllo ✓ 日本語'"
		src := "gemgateGreeting\n\t^ " + literal
		if res := callTool(t, cs, "compile_method", map[string]any{"className": class, "source": src, "category": "gemgate"}); res.IsError {
			t.Fatalf("compile_method: %q", text(res))
		}
		res := callTool(t, cs, "get_method_source", map[string]any{"className": class, "selector": "gemgateGreeting"})
		if res.IsError || !strings.Contains(text(res), literal) {
			t.Errorf("get_method_source = %q, want it to hold %s", text(res), literal)
		}
	})
}

// stoneIdle is how long an idle session waits under write load: on a real stone
// GEMGATE_TEST_GEMSTONE_IDLE (default 2m), on the fake 0.
func stoneIdle(t *testing.T) time.Duration {
	if !realStone() {
		return 0
	}
	v := cmp.Or(os.Getenv("GEMGATE_TEST_GEMSTONE_IDLE"), "2m")
	d, err := time.ParseDuration(v)
	if err != nil {
		t.Fatalf("GEMGATE_TEST_GEMSTONE_IDLE: %v", err)
	}
	return d
}

// writeFor commits through writer for at least d (once when d is 0): write load from another
// session.
func writeFor(t *testing.T, writer *mcp.ClientSession, d time.Duration) {
	t.Helper()
	for end := time.Now().Add(d); ; {
		res := callTool(t, writer, "execute_code", map[string]any{"code": "UserGlobals at: #GemgateWriteLoad put: (Array new: 100). System commitTransaction"})
		if realStone() && (res.IsError || !strings.Contains(text(res), "true")) {
			t.Fatalf("the writer's commit: %q", text(res))
		}
		if !time.Now().Before(end) {
			return
		}
		time.Sleep(500 * time.Millisecond) // the pace of the write load, not a wait for a condition
	}
}

// usersViewUnderWriteLoad: the user's session leaves uncommitted work in its gem, which stays
// in its transaction between calls (auto-begin) and so pins a commit record while another
// session commits. A stone may terminate it for that (docs/gemstone.md, "The user's gem under
// write load"); the fake does once the view is older than user_view_abort_ms, and says so on
// stderr, which gemgate logs. Either the work is still there, or the next call is an error
// naming the lost session and the session has ended: a call answered by a fresh gem (the work
// silently gone) fails. On the fake the gem must have been terminated.
func usersViewUnderWriteLoad(t *testing.T) {
	g := startGemStoneDev(t, map[string]any{"write_load": true, "user_view_abort_ms": 2000}, "--streamless-idle-timeout", "30m", "--idle-timeout", "30m")
	s := ltOpen(t, g, g.Tokens["alice"], nil)
	idle := stoneIdle(t)
	ctx, cancel := context.WithTimeout(context.Background(), idle+2*time.Minute)
	defer cancel()
	code := func(c string) map[string]any {
		return map[string]any{"name": "execute_code", "arguments": map[string]any{"code": c}}
	}
	// A fresh view (the fake's clock starts again), then work left uncommitted in it.
	if m, _, _, err := s.call(ctx, 0, "tools/call", map[string]any{"name": "abort", "arguments": map[string]any{}}); err != nil || m.Error != nil {
		t.Fatalf("abort: %v %+v", err, m.Error)
	}
	if m, _, _, err := s.call(ctx, 1, "tools/call", code("UserGlobals at: #GemgateUncommitted put: 'kept'")); err != nil || m.Error != nil || !strings.Contains(string(m.Result), "'kept'") {
		t.Fatalf("the uncommitted put: %v %+v %s", err, m.Error, m.Result)
	}
	if realStone() {
		writeFor(t, connect(t, g.URL, g.Tokens["alice"], nil), idle)
	} else {
		ltWaitLog(t, g, "the stone terminated it", 30*time.Second)
	}
	m, _, _, err := s.call(ctx, 2, "tools/call", code("UserGlobals at: #GemgateUncommitted ifAbsent: [nil]"))
	switch {
	case err != nil:
		t.Fatalf("the call after %v idle under write load: %v; want an answer", idle, err)
	case m.Error == nil && strings.Contains(string(m.Result), "'kept'") && realStone():
		return // the stone left the gem, and its work, alone
	case m.Error == nil:
		t.Fatalf("after the stone terminated the user's gem, the next call was answered %s: a fresh gem, the uncommitted work silently gone", m.Result)
	case !strings.Contains(m.Error.Message, "the GemStone session ended"):
		t.Errorf("the call that met the terminated gem: %q; want it to name the lost session", m.Error.Message)
	}
	pollUntil(t, 10*time.Second, "the session to end with its worker", func() bool { return ltEndReason(g, s.id) == "worker_exit" })
	if _, _, _, err := s.call(ctx, 3, "tools/list", nil); err == nil || !strings.Contains(err.Error(), "status 404") {
		t.Errorf("the request after the lost gem: %v; want 404", err)
	}
}

func TestGemStoneSessionIsTheUsers(t *testing.T) {
	t.Parallel()
	g := startGemStoneDev(t, nil)
	cs := connect(t, g.URL, g.Tokens["alice"], nil)
	if names := toolNames(t, cs); len(names) != 31 || !slices.Contains(names, "commit") {
		t.Errorf("read-write tools/list has %d tools: %v", len(names), names)
	}
	if got := text(callTool(t, cs, "status", nil)); !strings.Contains(got, "alice") {
		t.Errorf("status = %q", got)
	}
	long := text(callTool(t, cs, "execute_code", map[string]any{"code": "String new: 40000 withAll: $g"}))
	if want := "'" + strings.Repeat("g", 40000) + "'"; long != want {
		t.Errorf("a 40,000-character answer came back as %d characters", len(long))
	}
	utf := "'héllo ✓ 日本語 😀 ''quoted'''"
	if got := text(callTool(t, cs, "execute_code", map[string]any{"code": utf})); got != utf {
		t.Errorf("multi-byte UTF-8: got %q, want %q", got, utf)
	}
}

func TestGemStoneReadOnlyListsThePreset(t *testing.T) {
	t.Parallel()
	want := presetTools(t)
	if !realStone() && len(want) != 22 {
		t.Fatalf("the preset lists %d tools, want the 22 read-only-safe core tools", len(want))
	}
	// "0.8.0" hides the gated tools itself; "unreleased" has no read-only mode, so only the
	// preset stands between a read-only session and them. gemgate serve, so that nothing but
	// the preset file sets read_only_tools.
	if realStone() { // a real stone accepts the exchanged token (audience gemstone)
		g := startGemStoneDev(t, nil, "--read-only-tools", strings.Join(want, ","))
		if got := toolNames(t, connect(t, g.URL, g.Tokens["bob"], nil)); !slices.Equal(got, want) {
			t.Errorf("read-only tools/list = %v, want %v", got, want)
		}
		return
	}
	iss := newTestIssuer(t)
	users := map[string]any{"bob": map[string]any{"audiences": []string{"*"}, "issuers": []string{"*"}}}
	for _, server := range []string{"0.8.0", "unreleased"} {
		t.Run(server, func(t *testing.T) {
			t.Parallel()
			g := startServe(t, append(fakeStone(t, map[string]any{"server": server, "users": users}),
				"--issuer", iss.URL(), "--worker-credential", "passthrough", "--config", "../policy/presets/gemstone.yaml")...)
			trustIssuer(t, iss.URL())
			cs := connect(t, g.URL, iss.mint(iss.claims(g.URL, "bob", "mcp:use")), nil) // no mcp:write: read-only
			if got := toolNames(t, cs); !slices.Equal(got, want) {
				t.Errorf("read-only tools/list = %v, want %v", got, want)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			if res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "commit"}); err == nil && !res.IsError {
				t.Error("a read-only session could call commit")
			}
		})
	}
}

// connectErr opens a session and answers the error the client got, "" when it connected.
func connectErr(t *testing.T, url, token string) string {
	t.Helper()
	client := mcp.NewClient(&mcp.Implementation{Name: "gemgate-e2e", Version: "1"}, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cs, err := client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: url, HTTPClient: httpClientWithToken(token)}, nil)
	if err != nil {
		return err.Error()
	}
	cs.Close()
	return ""
}

func TestGemStoneLoginRefusalsReachTheClient(t *testing.T) {
	t.Parallel()
	iss := newTestIssuer(t)
	users := map[string]any{"alice": map[string]any{"audiences": []string{"*"}, "issuers": []string{"*"}}}
	for _, tc := range []struct {
		name   string
		users  map[string]any
		claims func(url string) map[string]any
		want   []string // on the fake stone; a real one must only refuse
	}{
		{"expired when the stone checks", users, func(url string) map[string]any {
			c := iss.claims(url, "alice", "mcp:use mcp:write")
			c["exp"] = time.Now().Add(-5 * time.Second).Unix() // within the gateway's clock skew, not the stone's
			return c
		}, []string{"expired", "token expired"}},
		{"array audience", users, func(url string) map[string]any {
			c := iss.claims(url, "alice", "mcp:use mcp:write")
			c["aud"] = []string{url, "account"}
			return c
		}, []string{"single string", "Invalid or missing aud"}},
		{"gateway audience", nil, func(url string) map[string]any {
			return iss.claims(url, "alice", "mcp:use mcp:write")
		}, []string{"exchange", "Invalid or missing aud"}},
		{"unknown user", users, func(url string) map[string]any {
			return iss.claims(url, "carol", "mcp:use mcp:write")
		}, []string{"no JWT-enabled user", "'carol' not found"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			cfg := map[string]any{}
			if tc.users != nil {
				cfg["users"] = tc.users
			}
			g := startServe(t, append(fakeStone(t, cfg), "--issuer", iss.URL(), "--worker-credential", "passthrough")...)
			trustIssuer(t, iss.URL())
			tok := iss.mint(tc.claims(g.URL))
			msg := connectErr(t, g.URL, tok)
			if !strings.Contains(msg, "GemStone refused the login") {
				t.Fatalf("initialize error = %q", msg)
			}
			for _, w := range tc.want {
				if !realStone() && !strings.Contains(msg, w) {
					t.Errorf("initialize error %q lacks %q", msg, w)
				}
			}
			if strings.Contains(msg, tok) || strings.Contains(g.logs.String(), tok) {
				t.Error("the token appears in the error or the log")
			}
		})
	}
}

func TestGemStoneCrashMidCall(t *testing.T) {
	t.Parallel()
	needFake(t, "a crash mid-call")
	g := startGemStoneDev(t, map[string]any{"fault": "crash"})
	cs := connect(t, g.URL, g.Tokens["alice"], nil)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if _, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "status"}); err == nil || !strings.Contains(err.Error(), "exited") {
		t.Errorf("a call whose gem crashed answered err=%v", err)
	}
	connect(t, g.URL, g.Tokens["alice"], nil) // gemgate carries on: a new session opens
}

// TestGemStoneStallEndsAtTheRequestTimeout: a call whose gem never answers (the fake's stall
// keeps topaz alive, blocked, and deaf to SIGINT) is answered -32001 with the caller's own id
// once request_timeout has passed, not before and not at the end of the escalation; then, as
// docs/session-lifetime.md says, the worker answers no ping, not even after SIGINT, so it is
// stopped as "unresponsive", and the session, whose GemStone state went with the worker, ends
// with it: the next request gets 404 and the client starts again.
func TestGemStoneStallEndsAtTheRequestTimeout(t *testing.T) {
	t.Parallel()
	needFake(t, "a stalled call")
	const timeout = 2 * time.Second
	g := startGemStoneDev(t, map[string]any{"fault": "stall"}, "--request-timeout", timeout.String())
	s := ltOpen(t, g, g.Tokens["alice"], nil)
	pid := ltWorkerPID(t, g, s.id)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	start := time.Now()
	m, _, _, err := s.call(ctx, "stalled-call-7", "tools/call", map[string]any{"name": "status", "arguments": map[string]any{}})
	took := time.Since(start)
	if err != nil {
		t.Fatalf("the stalled call: %v (after %v)", err, took)
	}
	if m.Error == nil || m.Error.Code != -32001 || string(m.ID) != `"stalled-call-7"` {
		t.Fatalf("the stalled call was answered id %s, result %s, error %+v; want -32001 with id \"stalled-call-7\"", m.ID, m.Result, m.Error)
	}
	// Not before the timeout; and well before the ping after it could have failed (5 s).
	if took < timeout || took > timeout+4*time.Second {
		t.Errorf("answered after %v, want just after the %v request timeout", took, timeout)
	}
	if !alive(pid) {
		t.Fatalf("the worker %d died with the timeout: the stall did not last", pid)
	}
	ltWaitGone(t, pid, 30*time.Second)
	ltWaitWorkerEnd(t, g, "unresponsive")
	ltWaitLog(t, g, "interrupting it", time.Second) // SIGINT came before the stop
	pollUntil(t, 10*time.Second, "the session to end as unresponsive", func() bool { return ltEndReason(g, s.id) == "unresponsive" })
	if _, _, _, err := s.call(ctx, "after-stall", "tools/list", nil); err == nil || !strings.Contains(err.Error(), "status 404") {
		t.Errorf("the request after the unresponsive worker was stopped: %v; want 404", err)
	}
}

func TestGemStoneCorruptedAnswerNamesTheDefect(t *testing.T) {
	t.Parallel()
	needFake(t, "#51438 corruption")
	for _, raw := range []bool{false, true} {
		t.Run(fmt.Sprintf("raw_relay=%v", raw), func(t *testing.T) {
			t.Parallel()
			g := startGemStoneDev(t, map[string]any{"defect_51438": true, "raw_relay": raw})
			cs := connect(t, g.URL, g.Tokens["alice"], nil)
			exec := func(n int) (*mcp.CallToolResult, error) {
				ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
				defer cancel()
				return cs.CallTool(ctx, &mcp.CallToolParams{Name: "execute_code", Arguments: map[string]any{"code": fmt.Sprintf("String new: %d withAll: $x", n)}})
			}
			if _, err := exec(4000); err != nil { // grows the fetch buffer: correct
				t.Fatalf("first large answer: %v", err)
			}
			res, err := exec(1500) // 1,025 bytes..buffer size: a stale tail
			if err == nil {
				t.Fatalf("a corrupted answer reached the client: %.200s", text(res))
			}
			for _, w := range []string{"#51438", "3.7.4.1"} {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
			if got, err := exec(5); err != nil || text(got) != "'xxxxx'" {
				t.Errorf("a small answer afterwards: %v %v", got, err)
			}
		})
	}
}

func TestGemStoneCheck(t *testing.T) {
	t.Parallel()
	flags := fakeStone(t, nil)
	run := func(extra ...string) (int, string) {
		cmd := exec.Command(gemgateBin, append(append([]string{"check", "--auth", "none", "--listen", "127.0.0.1:0", "--metrics-listen", "off"}, flags...), extra...)...)
		out, _ := cmd.CombinedOutput()
		return cmd.ProcessState.ExitCode(), string(out)
	}
	// auth none cannot give the relay a credential: one problem, and every GemStone check passes.
	code, out := run("--worker-credential", "exchange")
	for _, w := range []string{"OK       gemstone: topaz found", "gemstone: GemStone 3.7.5", "OK       gemstone: gemstone_home is GemStone 3.7.5", "gemstone: netldi gs64ldi is running", "is 0600"} {
		if !realStone() && !strings.Contains(out, w) {
			t.Errorf("check output lacks %q:\n%s", w, out)
		}
	}
	if code != 1 || !strings.Contains(out, "needs auth=oidc") {
		t.Errorf("exit %d:\n%s", code, out)
	}
}
