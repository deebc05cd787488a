// These tests hold the launcher's user-name check against auth's Authenticator, wired as
// cmd/gemgate wires them; from outside the package, which itself never imports auth.

package worker_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/gemgate/gemgate/auth"
	"github.com/gemgate/gemgate/worker"
)

// FuzzWorkerUserNameAuthAgreesWithLaunch: with "{user}" in worker_user (one system account
// per user), authentication admits exactly the user names the launcher finds an account for.
// A name admitted and then refused by the account lookup would get a 503 with Retry-After at
// every request, retried for ever (a ':' in the name did, before CheckUser applied the
// lookup's own rules); one refused that the launcher took, a user shut out for nothing.
func FuzzWorkerUserNameAuthAgreesWithLaunch(f *testing.F) {
	for _, s := range []string{"alice", "svc:alice", "a:b", ":", "-rf", "..", "a/b", "", "a\x00b", "a\nb", "root", "nobody", "daemon", "1", "0", "Zoë", strings.Repeat("x", 300)} {
		for _, tmpl := range []string{"{user}", "mcp-{user}", "{user}-mcp"} {
			f.Add(s, tmpl)
		}
	}
	f.Fuzz(func(t *testing.T, user, template string) {
		if !strings.Contains(template, "{user}") {
			return
		}
		l := &worker.CommandLauncher{Command: []string{"/bin/true", "--stdio"}, WorkerUser: template}
		authn := auth.NewAuthenticator(auth.AuthenticatorOptions{Verifier: nameVerifier{user}, UserName: l.CheckUser})
		passed := false
		h := authn.Middleware(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { passed = true }))
		r := httptest.NewRequest("POST", "/mcp", nil)
		r.Header.Set("Authorization", "Bearer t0ken")
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, r)
		_, launchErr := l.Launch(context.Background(), worker.Identity{Subject: "s", User: user})
		if passed && errors.Is(launchErr, worker.ErrNotAccountName) {
			t.Fatalf("user %q, worker_user %q: authentication admitted it, the account lookup refuses its syntax: %v", user, template, launchErr)
		}
		if passed != (launchErr == nil) {
			t.Fatalf("user %q, worker_user %q: authentication admitted %t (status %d), launcher: %v", user, template, passed, rec.Code, launchErr)
		}
		if !passed && (rec.Code != http.StatusForbidden || rec.Header().Get("Retry-After") != "") {
			t.Fatalf("user %q, worker_user %q: refused with %d, Retry-After %q; want 403 and none", user, template, rec.Code, rec.Header().Get("Retry-After"))
		}
	})
}

// A user whose account does not exist, or is a system account, is refused at authentication
// (403, no Retry-After), with a reason that names neither the user nor the account; so is a
// name no account can have. The launcher refuses each of them too.
func TestWorkerUserAccountCheckedAtAuthentication(t *testing.T) {
	for _, tc := range []struct{ template, user, reason string }{
		{"{user}", "svc:alice", "no system account can have"},
		{"mcp-{user}", "gemgate-no-such-account", "does not exist"},
		{"{user}", "root", "a system account"},
		{"{user}", "nobody", "a system account"},
		{"{user}", "daemon", "a system account"},
	} {
		l := &worker.CommandLauncher{Command: []string{"/bin/true"}, WorkerUser: tc.template}
		err := l.CheckUser(tc.user)
		if err == nil || !strings.Contains(err.Error(), tc.reason) || strings.Contains(err.Error(), tc.user) {
			t.Errorf("%q as %q: CheckUser %v; want a refusal that says %q and not the name", tc.user, tc.template, err, tc.reason)
		}
		if _, err := l.Launch(t.Context(), worker.Identity{Subject: "s", User: tc.user}); err == nil {
			t.Errorf("%q as %q: the launcher takes a name CheckUser refuses", tc.user, tc.template)
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
		l := &worker.CommandLauncher{Command: []string{"/bin/true", "--stdio"}}
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
		_, launchErr := l.Launch(context.Background(), worker.Identity{Subject: "s", User: user})
		if passed != (launchErr == nil) {
			t.Fatalf("user %q: authentication admitted %t (status %d), launcher: %v", user, passed, rec.Code, launchErr)
		}
		if !passed && (rec.Code != http.StatusForbidden || rec.Header().Get("Retry-After") != "") {
			t.Fatalf("user %q refused with %d, Retry-After %q; want 403 and none", user, rec.Code, rec.Header().Get("Retry-After"))
		}
	})
}
