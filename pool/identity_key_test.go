package pool

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gemgate/gemgate/auth"
)

// A worker acts as the user name and holds the scopes (and, with a credential mode, the
// token) of the identity that started it, so it is keyed on them: a second subject with the
// same user name, or a client of the same user with fewer scopes, never lands in it. The same
// scope set in another order is the same worker.
func TestWorkerKeyHoldsWhatTheWorkerIsGiven(t *testing.T) {
	var launches atomic.Int32
	p, err := New(Options{Launcher: countingLauncher{&launches}, InitTimeout: waitFor})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Close)
	who := func(sub, user string, scopes ...string) Identity {
		return Identity{Principal: auth.Principal{Issuer: "https://issuer.test", Subject: sub, User: user, Scopes: scopes}}
	}
	for i, tc := range []struct {
		name     string
		id       Identity
		launches int32
	}{
		{"first client", who("sub-a", "alice", "mcp:use", "mcp:write", "files:admin"), 1},
		{"same scopes, other order", who("sub-a", "alice", "files:admin", "mcp:write", "mcp:use", "mcp:use"), 1},
		{"fewer scopes", who("sub-a", "alice", "mcp:use", "mcp:write"), 2},
		{"another subject, same name", who("sub-b", "alice", "mcp:use", "mcp:write"), 3},
		{"same subject, renamed", who("sub-a", "alice2", "mcp:use", "mcp:write"), 4},
		{"a scope holding a space is not two scopes", who("sub-a", "alice", "mcp:use mcp:write"), 5},
	} {
		m, _, err := p.Attach(t.Context(), Attach{Identity: tc.id, Caller: newCaller(time.Time{}), Params: []byte(`{"protocolVersion":"2025-06-18","capabilities":{}}`)})
		if err != nil {
			t.Fatalf("%d %s: %v", i, tc.name, err)
		}
		if n := launches.Load(); n != tc.launches {
			t.Errorf("%s: %d workers started, want %d", tc.name, n, tc.launches)
		}
		m.Detach()
	}
}

// Only an identity of the slot's key may start or renew its worker: a later call of a
// session whose token grants another scope set must not restart the worker with that token's
// scopes and credential for the slot's other callers.
func TestWorkerRestartNeedsTheSlotsGrant(t *testing.T) {
	p := newTestPool(t, Settings{WorkerPer: PerUser, OnWorkerExit: ExitKeep})
	a := attach(t, p, "alice", false, `{}`, newCaller(time.Time{}))
	answer(t, a.tool(t, "die", map[string]any{}))
	fewer := *a
	fewer.id.Principal.Scopes = []string{"mcp:use"}
	deadline := time.Now().Add(waitFor)
	for {
		_, err := fewer.call(t, "tools/call", map[string]any{"name": "record"})
		if errors.Is(err, ErrGrantMismatch) && errors.Is(err, ErrAccessMismatch) {
			break
		}
		if err == nil || time.Now().After(deadline) {
			t.Fatalf("a call with another scope set after the worker died: %v, want ErrGrantMismatch", err)
		}
		time.Sleep(10 * time.Millisecond) // the dead worker is being taken out of service
	}
	if c, err := a.call(t, "tools/call", map[string]any{"name": "record"}); err != nil {
		t.Fatalf("a call of the slot's own grant: %v", err)
	} else {
		answer(t, c)
	}
}

// The worker is told the scope set, sorted, without repeats.
func TestWorkerToldItsScopeSet(t *testing.T) {
	l := &CommandLauncher{Command: []string{"/bin/true"}}
	la, err := l.Launch(context.Background(), Identity{Principal: auth.Principal{Subject: "s", User: "alice", Scopes: []string{"mcp:write", "mcp:use", "mcp:write"}}})
	if err != nil {
		t.Fatal(err)
	}
	for _, kv := range la.Env {
		if v, ok := strings.CutPrefix(kv, "GEMGATE_SCOPES="); ok && v != "mcp:use mcp:write" {
			t.Errorf("GEMGATE_SCOPES=%q, want %q", v, "mcp:use mcp:write")
		}
	}
}

func TestCheckUser(t *testing.T) {
	plain := &CommandLauncher{Command: []string{"/bin/true", "--stdio"}}
	inArgs := &CommandLauncher{Command: []string{"/bin/true", "--data=/srv/mcp/{user}"}}
	inAccount := &CommandLauncher{Command: []string{"/bin/true"}, WorkerUser: "mcp-{user}"}
	for _, tc := range []struct {
		user          string
		plain, inArgs bool // accepted
	}{
		{"alice", true, true},
		{"alice.smith@example.com", true, true},
		{"Zoë", true, true},
		{"auth0|123/abc", true, false},
		{"-rf", true, false},
		{"..", true, false},
		{".", true, false},
		{"a/b", true, false},
		{"a..b", true, true},
		{"", false, false},
		{"a\x00b", false, false},
		{"a\nb", false, false},
		{"a\x1b[31mb", false, false},
		{"a\u0085b", false, false},
		{"a\u2028b", false, false},
		{"\xff", false, false},
		{strings.Repeat("a", MaxUserNameBytes), true, true},
		{strings.Repeat("a", MaxUserNameBytes+1), false, false},
	} {
		if got := plain.CheckUser(tc.user) == nil; got != tc.plain {
			t.Errorf("%q without {user}: accepted %t, want %t", tc.user, got, tc.plain)
		}
		if got := inArgs.CheckUser(tc.user) == nil; got != tc.inArgs {
			t.Errorf("%q with {user} in worker_command: accepted %t, want %t", tc.user, got, tc.inArgs)
		}
		// With {user} in worker_user, the account must exist as well: mcp-<name> exists for
		// none of these, so a name the rules accept is refused as an account the system lacks.
		err := inAccount.CheckUser(tc.user)
		if err == nil || (tc.inArgs && !strings.Contains(err.Error(), "does not exist")) {
			t.Errorf("%q with {user} in worker_user (no such account): %v, want refused as no account (%t) or by the rules (%t)", tc.user, err, tc.inArgs, !tc.inArgs)
		}
	}
}

// nameVerifier verifies every token as a principal of user name user.
type nameVerifier struct{ user string }

func (v nameVerifier) Verify(context.Context, string) (auth.Principal, error) {
	return auth.Principal{Issuer: "https://issuer.test", Subject: "s", User: v.user, Scopes: []string{"mcp:use"}}, nil
}

// FuzzUserNameAuthAgreesWithLaunch: authentication admits exactly the user names the
// launcher starts a worker for. A name it admitted and the launcher refused would be a 503
// at every request, retried for ever; one it refused and the launcher took, a user shut out
// for nothing.
func FuzzUserNameAuthAgreesWithLaunch(f *testing.F) {
	for _, s := range []string{"alice", "-rf", "..", ".", "a/b", "", "a\x00b", "a\nb", "\xff", "Zoë", strings.Repeat("x", 300), "a\u2028b"} {
		f.Add(s, true)
		f.Add(s, false)
	}
	f.Fuzz(func(t *testing.T, user string, userInCommand bool) {
		l := &CommandLauncher{Command: []string{"/bin/true", "--stdio"}}
		if userInCommand {
			l.Command = append(l.Command, "--user={user}")
		}
		authn := auth.NewAuthenticator(auth.AuthenticatorOptions{Verifier: nameVerifier{user}, UserName: l.CheckUser})
		passed := false
		h := authn.Middleware(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { passed = true }))
		r := httptest.NewRequest("POST", "/mcp", nil)
		r.Header.Set("Authorization", "Bearer t0ken")
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, r)
		_, launchErr := l.Launch(context.Background(), Identity{Principal: auth.Principal{Subject: "s", User: user}})
		if passed != (launchErr == nil) {
			t.Fatalf("user %q: authentication admitted %t (status %d), launcher: %v", user, passed, rec.Code, launchErr)
		}
		if !passed && (rec.Code != http.StatusForbidden || rec.Header().Get("Retry-After") != "") {
			t.Fatalf("user %q refused with %d, Retry-After %q; want 403 and none", user, rec.Code, rec.Header().Get("Retry-After"))
		}
	})
}
