//go:build linux

package worker

import (
	"errors"
	"log/slog"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"
)

// Item 3: an opaque credential (not a JWT: '/', '+' and '=' in it) that the worker quotes in
// a URL, percent-encoded as every HTTP client writes a query parameter
// ("GET /api?access_token=AbC%2Fopaque%2Btoken%2FSECRETPART%3D%3D failed"), on stderr and in
// a JSON line. Neither the log nor the message trace may hold it. Today redaction knows the
// raw bytes, JSON escapes and base64 forms only, so the percent-encoded credential is
// written verbatim.
func TestAttackPercentEncodedCredentialIsRedacted(t *testing.T) {
	const cred = "AbC/opaque+token/SECRETPART=="
	enc := url.QueryEscape(cred)
	if !strings.Contains(enc, "%2F") {
		t.Fatalf("the credential's query form %q is not percent-encoded", enc)
	}
	for name, echo := range map[string]string{
		"stderr": `printf 'GET https://backend.test/api?access_token=%s: 502\n' '` + enc + `' >&2`,
		"json":   `printf '{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"error","data":"GET https://backend.test/api?access_token=%s: 502"}}\n' '` + enc + `'`,
	} {
		t.Run(name, func(t *testing.T) {
			var logs, trace logBuffer
			spec := Spec{Path: "/bin/sh", Args: []string{"-c", `read -r c; ` + echo + `; exec cat >/dev/null`},
				StopGrace: 200 * time.Millisecond, Logger: slog.New(slog.NewJSONHandler(&logs, nil)),
				Credential: []byte(cred), CredentialStdin: true,
				OnTrace: func(_ string, l []byte) { trace.Write(append(l, '\n')) }}
			p, err := Start(spec)
			if err != nil {
				t.Fatal(err)
			}
			defer p.Stop()
			seen := func() bool { return strings.Contains(logs.String()+trace.String(), "backend.test") }
			waitUntil(t, "the worker's line is logged or traced", seen)
			for what, out := range map[string]string{"trace": trace.String(), "log": logs.String()} {
				if strings.Contains(out, "SECRETPART") {
					t.Errorf("the %s holds the percent-encoded credential:\n%s", what, out)
				}
			}
		})
	}
}

// Every percent-encoded spelling of a credential is taken out of a line: the query form
// ("+" for a space) and the path form ("%20"), with upper- or lower-case hex digits; a
// credential no encoding changes has no percent forms.
func TestAttackPercentEncodedSpellingsAreRedacted(t *testing.T) {
	const cred = "AbC/opaque+token SECRETPART=="
	lower := func(s string) string {
		return regexp.MustCompile(`%[0-9A-F]{2}`).ReplaceAllStringFunc(s, strings.ToLower)
	}
	p := &Process{secrets: secretSpellings([]byte(cred), nil)}
	for _, form := range []string{url.QueryEscape(cred), url.PathEscape(cred), lower(url.QueryEscape(cred)), lower(url.PathEscape(cred))} {
		got := string(p.Redacted([]byte("GET https://backend.test/x?t=" + form + " failed")))
		if strings.Contains(got, "SECRETPART") || !strings.Contains(got, "[redacted]") {
			t.Errorf("%q: logged as %q", form, got)
		}
	}
	if forms := percentForms([]byte("plain-token_1.2~x")); len(forms) != 0 {
		t.Errorf("a credential no encoding changes has percent forms %q", forms)
	}
}

// Item 7: with worker_user "{user}" (one account per user), a user name with ':' passed
// CheckUser, the judgement authentication makes, and then every launch refused it
// ("is not an account name"): the token was let in and every request got 503 with
// Retry-After, for ever. The launcher and the authentication check must agree: CheckUser
// applies the account lookup's own rules (CheckAccountName).
func TestAttackWorkerUserNameRefusedByCheckUserAsByLaunch(t *testing.T) {
	l := &CommandLauncher{Command: []string{"/bin/true"}, WorkerUser: "{user}"}
	for _, name := range []string{"a:b", "svc:alice"} {
		if err := l.CheckUser(name); err != nil {
			var ue *UserNameError
			if !errors.As(err, &ue) || strings.Contains(err.Error(), name) {
				t.Errorf("user name %q refused as %v; want a UserNameError without the name", name, err)
			}
			continue // refused at authentication: consistent
		}
		_, err := l.Launch(t.Context(), Identity{Subject: "sub", User: name})
		if err != nil && strings.Contains(err.Error(), "is not an account name") {
			t.Errorf("user name %q passes CheckUser (authentication lets the token in) but every launch refuses it: %v", name, err)
		}
	}
}
