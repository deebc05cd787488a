package main

import (
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"testing"
)

// gemgate dev's issuer writes a line for each token its token endpoint issues or refuses, in
// dev's own log (its format and level), and never the token, the subject token of an
// exchange, a client's secret or gemgate's own exchange secret.
func TestDevLogsTheTokensItsIssuerIssues(t *testing.T) {
	data := t.TempDir()
	var info devInfo
	logs, err := startJSONCommand(t, "dev", devCommand, []string{"--json", "--listen", "127.0.0.1:0",
		"--metrics-listen", "off", "--data-dir", data, "--log-format", "json"}, &info)
	if err != nil {
		t.Fatal(err)
	}
	state, err := loadDevState(devStatePaths(data))
	if err != nil {
		t.Fatal(err)
	}
	secrets := map[string]string{devGatewayClient: state.Secrets[devGatewayClient]}
	for _, cl := range info.Clients {
		secrets[cl.ID] = cl.Secret
	}
	if len(secrets) != 3 || secrets[devGatewayClient] == "" || secrets["alice"] == "" {
		t.Fatalf("client secrets %v, want alice's, bob's and gemgate's", secrets)
	}
	token := func(client, secret string, form url.Values) string {
		t.Helper()
		req, _ := http.NewRequest(http.MethodPost, info.Issuer+"/token", strings.NewReader(form.Encode()))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.SetBasicAuth(client, secret)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var body struct {
			AccessToken string `json:"access_token"`
		}
		json.NewDecoder(resp.Body).Decode(&body)
		return body.AccessToken
	}
	issued := token("alice", secrets["alice"], url.Values{"grant_type": {"client_credentials"}})
	exchanged := token(devGatewayClient, secrets[devGatewayClient], url.Values{
		"grant_type":         {"urn:ietf:params:oauth:grant-type:token-exchange"},
		"subject_token":      {issued},
		"subject_token_type": {"urn:ietf:params:oauth:token-type:access_token"},
		"audience":           {"gemstone"},
	})
	if issued == "" || exchanged == "" {
		t.Fatalf("tokens %q and %q, want both issued", issued, exchanged)
	}
	wrong := "wrong-" + secrets["bob"]
	if tok := token("bob", wrong, url.Values{"grant_type": {"client_credentials"}}); tok != "" {
		t.Fatal("a wrong client secret was given a token")
	}

	// The issuer logs before it answers: every line is there once the answers are in.
	var got []string
	for line := range strings.Lines(logs.String()) {
		var rec map[string]any
		if err := json.Unmarshal([]byte(line), &rec); err != nil {
			t.Fatalf("a line not in dev's JSON log format: %q", line)
		}
		if msg, _ := rec["msg"].(string); strings.HasPrefix(msg, "devissuer: ") {
			got = append(got, strings.Join([]string{rec["level"].(string), msg, str(rec["grant"]), str(rec["client"]), str(rec["error"])}, "|"))
		}
	}
	want := []string{
		"INFO|devissuer: token issued|client_credentials|alice|",
		"INFO|devissuer: token issued|urn:ietf:params:oauth:grant-type:token-exchange|gemgate|",
		"INFO|devissuer: token refused|client_credentials||invalid_client",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("the issuer's lines in dev's log:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	for what, s := range map[string]string{"the issued token": issued, "the exchanged token": exchanged, "the wrong secret": wrong,
		"alice's secret": secrets["alice"], "bob's secret": secrets["bob"], "gemgate's secret": secrets[devGatewayClient],
		"alice's printed token": info.Tokens["alice"], "bob's printed token": info.Tokens["bob"]} {
		if strings.Contains(logs.String(), s) {
			t.Errorf("dev's log holds %s:\n%s", what, logs)
		}
	}
}

// str is a log record's string value, or "" when it has none.
func str(v any) string {
	s, _ := v.(string)
	return s
}
