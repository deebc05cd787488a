package main

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/gemgate/gemgate/auth"
	"github.com/gemgate/gemgate/auth/devissuer"
)

// runIssuer runs gemgate issuer --json in this process until the test ends, and returns what
// it printed once ready.
func runIssuer(t *testing.T, args ...string) issuerInfo {
	t.Helper()
	var info issuerInfo
	runJSONCommand(t, "issuer", issuerCommand, append([]string{"--json"}, args...), &info)
	return info
}

// The issuer's printed tokens carry the audience it was given (the balancer's URL that every
// replica shares), its extra users get clients that work at its token endpoint, and a restart
// on the same data directory keeps the URL, the key and the secrets.
func TestIssuerTokensForSharedAudience(t *testing.T) {
	const audience = "http://127.0.0.1:18443/mcp"
	data := t.TempDir()
	args := []string{"--data-dir", data, "--audience", audience, "--users", "u01,u02"}
	var first issuerInfo
	t.Run("first start", func(t *testing.T) { first = runIssuer(t, args...) })
	info := runIssuer(t, args...)
	if first.Issuer == "" || info.Issuer != first.Issuer {
		t.Fatalf("issuer URL changed across a restart: %q then %q", first.Issuer, info.Issuer)
	}
	if !strings.HasPrefix(info.Issuer, "http://127.0.0.1:") || info.Audience != audience {
		t.Errorf("issuer %q audience %q", info.Issuer, info.Audience)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	v, err := auth.NewVerifier(ctx, auth.Config{Issuer: info.Issuer, Audiences: []string{audience}})
	if err != nil {
		t.Fatal(err)
	}
	for _, user := range []string{"alice", "bob", "u01", "u02"} {
		tok := info.Tokens[user]
		if p, err := v.Verify(ctx, tok); err != nil || p.Subject != user {
			t.Errorf("%s's printed token: %v %+v", user, err, p)
		}
	}
	if p, err := v.Verify(ctx, first.Tokens["u01"]); err != nil || p.Subject != "u01" {
		t.Errorf("u01's token from before the restart: %v %+v", err, p)
	}
	if _, ok := info.Tokens[devGatewayClient]; ok {
		t.Error("a token was printed for gemgate's own client")
	}
	if info.ExchangeClient.ID != devGatewayClient || info.ExchangeClient.Secret == "" {
		t.Errorf("exchange client %+v", info.ExchangeClient)
	}

	// u02's client credentials, at the token endpoint.
	var u02 devissuer.Client
	for _, cl := range info.Clients {
		if cl.ID == "u02" {
			u02 = cl
		}
	}
	for _, cl := range first.Clients {
		if cl.ID == "u02" && cl.Secret != u02.Secret {
			t.Error("u02's client secret changed across a restart")
		}
	}
	form := url.Values{"grant_type": {"client_credentials"}, "client_id": {u02.ID}, "client_secret": {u02.Secret}}
	resp, err := http.PostForm(info.Issuer+"/token", form)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var tr struct {
		AccessToken string `json:"access_token"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&tr); err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("token endpoint: %d %v", resp.StatusCode, err)
	}
	if p, err := v.Verify(ctx, tr.AccessToken); err != nil || p.Subject != "u02" || !strings.Contains(strings.Join(p.Scopes, " "), "mcp:write") {
		t.Errorf("u02's client-credentials token: %v %+v", err, p)
	}
}

// The issuer signs for anyone who asks, so it listens on loopback only; bad flags are
// reported together.
func TestIssuerRefusesBadFlags(t *testing.T) {
	tests := []struct {
		args []string
		want []string
	}{
		{[]string{"--listen", "0.0.0.0:0"}, []string{"loopback only", "1 problem"}},
		{[]string{"--listen", ":9400"}, []string{"loopback only"}},
		{[]string{"--listen", "192.0.2.1:9400", "--audience", "not a url", "--users", "alice,x y"}, []string{"4 problems", "loopback only", "audience", `"alice" is listed twice or is a built-in client`, `"x y" may hold`}},
		{[]string{"extra"}, []string{"unexpected arguments"}},
	}
	for _, tt := range tests {
		var out, errb bytes.Buffer
		code := run(append([]string{"issuer", "--data-dir", t.TempDir()}, tt.args...), &out, &errb)
		if code != 1 {
			t.Errorf("%v: exit %d, want 1", tt.args, code)
		}
		for _, w := range tt.want {
			if !strings.Contains(errb.String(), w) {
				t.Errorf("%v: stderr lacks %q:\n%s", tt.args, w, errb.String())
			}
		}
	}
}

// gemgate -h names the issuer command, and issuer -h says what it is for.
func TestIssuerHelp(t *testing.T) {
	var out, errb bytes.Buffer
	if code := run([]string{"-h"}, &out, &errb); code != 0 || !strings.Contains(out.String(), "\n  issuer ") {
		t.Errorf("gemgate -h: exit %d, lacks issuer:\n%s", code, out.String())
	}
	out.Reset()
	errb.Reset()
	if code := run([]string{"issuer", "-h"}, &out, &errb); code != 0 || !strings.Contains(errb.String(), "loopback only") || !strings.Contains(errb.String(), "-audience") {
		t.Errorf("gemgate issuer -h: exit %d:\n%s", code, errb.String())
	}
}

// gemgate issuer writes a line to stderr for each token it issues or refuses, as gemgate dev
// logs them, and no token or client secret is in it.
func TestIssuerLogsTheTokensItIssues(t *testing.T) {
	var info issuerInfo
	logs, err := startJSONCommand(t, "issuer", issuerCommand, []string{"--json", "--data-dir", t.TempDir(), "--users", "u01"}, &info)
	if err != nil {
		t.Fatal(err)
	}
	var u01 devissuer.Client
	for _, cl := range info.Clients {
		if cl.ID == "u01" {
			u01 = cl
		}
	}
	token := func(secret string) (string, int) {
		t.Helper()
		form := url.Values{"grant_type": {"client_credentials"}, "client_id": {u01.ID}, "client_secret": {secret}}
		resp, err := http.PostForm(info.Issuer+"/token", form)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var tr struct {
			AccessToken string `json:"access_token"`
		}
		json.NewDecoder(resp.Body).Decode(&tr)
		return tr.AccessToken, resp.StatusCode
	}
	issued, status := token(u01.Secret)
	if issued == "" || status != http.StatusOK {
		t.Fatalf("u01's client credentials: %d", status)
	}
	wrong := "wrong-" + u01.Secret
	if tok, status := token(wrong); tok != "" || status == http.StatusOK {
		t.Fatalf("a wrong client secret was answered %d", status)
	}
	// The issuer logs before it answers: both lines are there once the answers are in.
	var got []string
	for line := range strings.Lines(logs.String()) {
		if strings.Contains(line, `msg="devissuer: `) {
			_, rest, _ := strings.Cut(line, " level=")
			got = append(got, strings.TrimSpace(rest))
		}
	}
	want := []string{
		`INFO msg="devissuer: token issued" grant=client_credentials client=u01 scope="mcp:use mcp:write"`,
		`INFO msg="devissuer: token refused" grant=client_credentials client="" error=invalid_client description="client authentication failed"`,
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("the issuer's lines on stderr:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	for what, s := range map[string]string{"the issued token": issued, "the wrong secret": wrong, "u01's secret": u01.Secret,
		"u01's printed token": info.Tokens["u01"], "gemgate's secret": info.ExchangeClient.Secret} {
		if strings.Contains(logs.String(), s) {
			t.Errorf("the issuer's stderr holds %s:\n%s", what, logs)
		}
	}
}
