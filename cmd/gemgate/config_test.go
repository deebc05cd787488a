package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func writeFile(t *testing.T, name, body string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestConfigLayers(t *testing.T) {
	file := writeFile(t, "gemgate.yaml", `
issuer: https://file.example/realms/a
idle_timeout: 20m
stream_loss_grace: 5s
required_scopes: [mcp:use, team]
trace_limit: none
`)
	t.Setenv("GEMGATE_IDLE_TIMEOUT", "15m")
	t.Setenv("GEMGATE_STREAM_LOSS_GRACE", "7s")
	t.Setenv("GEMGATE_EXCHANGE_CLIENT_SECRET", "from-env")
	c, err := load("serve", []string{"--config", file, "--stream-loss-grace", "9s", "--audiences", "a,b c"})
	if err != nil {
		t.Fatal(err)
	}
	got := struct {
		Issuer        string
		Idle, Grace   time.Duration
		Scopes, Auds  []string
		Secret, Limit string
		Listen        string
	}{c.Issuer, c.IdleTimeout, c.StreamLossGrace, c.RequiredScopes, c.Audiences, c.ExchangeSecret, c.TraceLimit, c.Listen}
	want := struct {
		Issuer        string
		Idle, Grace   time.Duration
		Scopes, Auds  []string
		Secret, Limit string
		Listen        string
	}{
		Issuer: "https://file.example/realms/a", // file over default
		Idle:   15 * time.Minute,                // environment over file
		Grace:  9 * time.Second,                 // flag over environment
		Scopes: []string{"mcp:use", "team"}, Auds: []string{"a", "b", "c"},
		Secret: "from-env", Limit: "none", Listen: "127.0.0.1:8080",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("config (-want +got):\n%s", diff)
	}
}

func TestConfigFileProblemsAreListedTogether(t *testing.T) {
	file := writeFile(t, "bad.yaml", "idle_timeout: soon\nno_such_setting: 1\nmax_sessions: many\n")
	_, err := load("serve", []string{"--config", file})
	if err == nil {
		t.Fatal("want an error")
	}
	for _, want := range []string{"idle_timeout", "no_such_setting", "max_sessions"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error lacks %q:\n%v", want, err)
		}
	}
}

func TestValidateListsEveryProblem(t *testing.T) {
	c, err := load("serve", []string{
		"--listen", "0.0.0.0:8080", "--auth", "none", "--worker", "command",
		"--worker-credential", "exchange", "--trace-limit", "-3", "--tls-cert", "x.pem",
	})
	if err != nil {
		t.Fatal(err)
	}
	errs := c.validate()
	text := configErrors(errs).Error()
	for _, want := range []string{
		"public_url: required",           // non-loopback without public URL
		"tls_cert and tls_key",           // half a TLS pair
		"auth: none is only allowed",     // auth none off loopback
		"worker_command: required",       // command worker without a command
		"exchange needs exchange_client", // exchange without its settings
		"worker_credential: exchange needs auth=oidc",
		"trace_limit",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("problems lack %q:\n%s", want, text)
		}
	}
	if len(errs) < 7 {
		t.Errorf("got %d problems, want at least 7", len(errs))
	}
}

func TestServeRefusesPlainHTTPOffLoopback(t *testing.T) {
	c, _ := load("serve", []string{"--listen", "0.0.0.0:8080", "--public-url", "http://gw.example/mcp", "--issuer", "https://id.example"})
	if errs := c.validate(); !strings.Contains(configErrors(errs).Error(), "plain HTTP") {
		t.Errorf("want the plain-HTTP refusal, got %v", errs)
	}
	c, _ = load("serve", []string{"--listen", "0.0.0.0:8080", "--public-url", "https://gw.example/mcp", "--issuer", "https://id.example"})
	if errs := c.validate(); len(errs) != 0 {
		t.Errorf("https public URL behind a proxy should validate: %v", errs)
	}
	c, _ = load("serve", []string{"--listen", "0.0.0.0:8080", "--public-url", "http://gw.example/mcp", "--issuer", "https://id.example", "--allow-insecure-http"})
	if errs := c.validate(); len(errs) != 0 {
		t.Errorf("allow_insecure_http should validate: %v", errs)
	}
}

func TestDevRefusesNonLoopback(t *testing.T) {
	for _, args := range [][]string{
		{"dev", "--listen", "0.0.0.0:0"},
		{"dev", "--dev-issuer-listen", "0.0.0.0:0", "--listen", "127.0.0.1:0"},
	} {
		var out, errb bytes.Buffer
		if code := run(args, &out, &errb); code == 0 || !strings.Contains(errb.String(), "loopback") {
			t.Errorf("%v: exit %d, stderr %q", args, code, errb.String())
		}
	}
}

func TestUnknownCommandAndVersion(t *testing.T) {
	var out, errb bytes.Buffer
	if code := run([]string{"frobnicate"}, &out, &errb); code != 2 {
		t.Errorf("unknown command exit = %d", code)
	}
	out.Reset()
	if code := run([]string{"version"}, &out, &errb); code != 0 || !strings.HasPrefix(out.String(), "gemgate ") {
		t.Errorf("version: %d %q", code, out.String())
	}
}

func TestCheck(t *testing.T) {
	ctx := context.Background()
	t.Run("good", func(t *testing.T) {
		var out, errb bytes.Buffer
		code := checkCommand(ctx, unsandboxed("--auth", "none", "--listen", "127.0.0.1:0", "--metrics-listen", "off"), &out, &errb)
		if code != 0 || !strings.Contains(out.String(), "All checks passed") {
			t.Errorf("exit %d:\n%s%s", code, out.String(), errb.String())
		}
	})
	t.Run("three problems", func(t *testing.T) {
		var out, errb bytes.Buffer
		code := checkCommand(ctx, []string{"--auth", "magic", "--worker", "command", "--log-format", "xml", "--listen", "127.0.0.1:0", "--metrics-listen", "off"}, &out, &errb)
		if code == 0 {
			t.Fatal("want a failing exit status")
		}
		for _, want := range []string{`auth: "magic"`, "worker_command: required", "log_format"} {
			if !strings.Contains(out.String(), want) {
				t.Errorf("report lacks %q:\n%s", want, out.String())
			}
		}
		if strings.Count(out.String(), "fix:") < 3 {
			t.Errorf("every problem needs a fix line:\n%s", out.String())
		}
	})
	t.Run("unreachable issuer", func(t *testing.T) {
		var out, errb bytes.Buffer
		code := checkCommand(ctx, unsandboxed("--issuer", "http://127.0.0.1:1/realms/x", "--listen", "127.0.0.1:0", "--metrics-listen", "off"), &out, &errb)
		if code == 0 || !strings.Contains(out.String(), "PROBLEM  issuer http://127.0.0.1:1/realms/x") {
			t.Errorf("exit %d:\n%s", code, out.String())
		}
	})
	t.Run("missing worker command", func(t *testing.T) {
		var out, errb bytes.Buffer
		code := checkCommand(ctx, unsandboxed("--auth", "none", "--worker", "command", "--worker-command", "no-such-gemgate-worker --flag", "--listen", "127.0.0.1:0", "--metrics-listen", "off"), &out, &errb)
		if code == 0 || !strings.Contains(out.String(), `worker command "no-such-gemgate-worker"`) {
			t.Errorf("exit %d:\n%s", code, out.String())
		}
	})
}

func TestConfigFilesLayerInOrder(t *testing.T) {
	preset := writeFile(t, "preset.yaml", "read_only_tools: [status, list_*]\nidle_timeout: 10m\n")
	own := writeFile(t, "own.yaml", "issuer: https://id.example/realms/x\nidle_timeout: 20m\n")
	c, err := load("serve", []string{"--config", preset, "--config", own})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"status", "list_*"}, c.ReadOnlyTools); diff != "" {
		t.Errorf("read_only_tools from the preset (-want +got):\n%s", diff)
	}
	if c.IdleTimeout != 20*time.Minute || c.Issuer != "https://id.example/realms/x" {
		t.Errorf("the later file should win: idle %v, issuer %q", c.IdleTimeout, c.Issuer)
	}
}

// Every setting with a fixed set of values says so in one place, its choices tag, and the
// default is one of them.
func TestChoices(t *testing.T) {
	c := defaults()
	c.byWorker(runningAsRoot()) // as load resolves it
	if errs := c.checkChoices(); len(errs) > 0 {
		t.Fatalf("defaults outside their choices: %v", errs)
	}
	c.Auth, c.Worker, c.PostAnswers = "saml", "docker", "xml"
	errs := c.checkChoices()
	var got []string
	for _, e := range errs {
		got = append(got, e.Error())
	}
	want := []string{`auth: "saml" is not oidc or none`, `worker: "docker" is not demo, command or gemstone`, `post_answers: "xml" is not sse or json`}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("choice errors (-want +got):\n%s", diff)
	}
}

// A config file that sets the exchange client and audience and leaves the secret to the
// environment (docs/gemstone.md's example) is told which setting is missing, and where the
// secret goes.
func TestExchangeProblemNamesWhatIsMissing(t *testing.T) {
	c, err := load("serve", []string{"--issuer", "https://id.example", "--worker-credential", "exchange",
		"--exchange-client-id", "gemgate", "--exchange-audience", "gemstone"})
	if err != nil {
		t.Fatal(err)
	}
	text := configErrors(c.validate()).Error()
	for _, want := range []string{"not set: exchange_client_secret (", "GEMGATE_EXCHANGE_CLIENT_SECRET"} {
		if !strings.Contains(text, want) {
			t.Errorf("problems lack %q:\n%s", want, text)
		}
	}
	if strings.Contains(text, "not set: exchange_client_id") || strings.Contains(text, "exchange_audience, ") {
		t.Errorf("problems name a setting that is set:\n%s", text)
	}
}

// A setting of gemgate dev in serve's config file is refused as unknown, saying whose it is
// and what serve takes instead.
func TestDevSettingInServeFileSaysWhose(t *testing.T) {
	file := writeFile(t, "dev.yaml", "tls: true\n")
	_, err := load("serve", []string{"--config", file})
	if err == nil || !strings.Contains(err.Error(), `unknown setting "tls": a setting of gemgate dev only (serve takes a certificate of its own: tls_cert and tls_key)`) {
		t.Errorf("got %v", err)
	}
	if c, err := load("dev", []string{"--config", file}); err != nil || !c.DevTLS {
		t.Errorf("dev: %v", err)
	}
}
