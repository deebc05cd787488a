package test

import (
	"net"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"
)

// Behind a TLS-terminating proxy, gemgate listens on plain HTTP on a private address with an
// https public_url, and needs no allow_insecure_http for that (docs/configuration.md). That
// setting does more than allow the plain hop: it lets issuer, jwks_url and exchange_token_url
// be plain http (docs/security.md, "Where keys and secrets travel"), so that whoever answers on
// the way to the issuer hands gemgate its signing keys, and the token endpoint is sent the
// client secret in the clear. The shipped proxy examples and the docs that set gemgate up
// behind them must not tell operators to turn it on.
func TestDeployProxySetupNeedsNoInsecureHTTP(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	_, port, _ := net.SplitHostPort(ln.Addr().String())
	ln.Close()
	check := func(args ...string) string {
		args = append([]string{"check", "--listen", "0.0.0.0:" + port, "--metrics-listen", "off",
			"--public-url", "https://mcp.example.com/mcp", "--trusted-proxies", "10.0.0.2/32"}, args...)
		out, _ := exec.Command(gemgateBin, args...).CombinedOutput()
		return string(out)
	}
	const valid = "OK       configuration is valid"
	// The documented setup, without the setting: valid.
	if out := check("--issuer", "https://sso.example.invalid/realms/gemgate"); !strings.Contains(out, valid) {
		t.Fatalf("the proxy setup without allow_insecure_http is refused:\n%s", out)
	}
	// With it, a plain-http issuer is taken; without it, refused.
	if out := check("--issuer", "http://sso.example.invalid/realms/gemgate", "--allow-insecure-http"); !strings.Contains(out, valid) {
		t.Fatalf("allow_insecure_http no longer admits a plain-http issuer (update this test's reasoning):\n%s", out)
	}
	if out := check("--issuer", "http://sso.example.invalid/realms/gemgate"); strings.Contains(out, valid) {
		t.Fatalf("a plain-http issuer is taken without allow_insecure_http:\n%s", out)
	}

	for _, f := range []string{"../deploy/proxy/Caddyfile", "../deploy/proxy/nginx.conf", "../deploy/README.md", "../docs/scale-out.md"} {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		text, first := string(b), 1
		if f == "../deploy/README.md" {
			// Its demo needs the setting (an http public_url on a container's address); its
			// section on the reverse proxy must not.
			start := strings.Index(text, "## Behind a reverse proxy")
			end := strings.Index(text[start+1:], "\n## ")
			first += strings.Count(text[:start], "\n")
			text = text[start : start+1+end]
		}
		for i, line := range strings.Split(text, "\n") {
			if regexp.MustCompile(`allow[-_]insecure[-_]http`).MatchString(line) && !regexp.MustCompile(`(?i)\bnot\b|\bno\b|never|without|only if|only when`).MatchString(line) {
				t.Errorf("%s:%d tells to turn on allow_insecure_http behind a TLS proxy, which https public_url makes needless and which admits a plain-http issuer:\n\t%s", f, first+i, strings.TrimSpace(line))
			}
		}
	}
}
