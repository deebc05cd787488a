package main

import (
	"context"
	"crypto/tls"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"time"

	"github.com/gemgate/gemgate/auth"
	"github.com/gemgate/gemgate/telemetry"
)

// checkCommand validates the configuration, then checks live what serving would need, and
// prints one line per check. It exits 0 only when everything is in order. With --token it
// explains instead whether that token would be accepted (check_token.go).
func checkCommand(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if url, rest, found, err := takeFlag(args, "health", "a URL"); found && err == nil && len(rest) == 0 {
		return healthCheck(ctx, url, stdout)
	}
	token, args, explain, err := takeFlag(args, "token", "a JWT, or - to read it from stdin")
	toolsFile := ""
	if err == nil {
		toolsFile, args, _, err = takeFlag(args, "tools", "a file holding a worker's tools/list, prompts/list or resources/list result")
	}
	if err != nil {
		fmt.Fprintf(stderr, "gemgate check: %v\n", err)
		return 2
	}
	c, err := load("check", args)
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	if err != nil {
		fmt.Fprintf(stderr, "gemgate check: %v\n", err)
		return 2
	}
	if explain {
		if token == "-" { // bounded; what was read is no token when reading fails
			b, err := io.ReadAll(io.LimitReader(os.Stdin, 64<<10))
			if err != nil {
				fmt.Fprintf(stderr, "gemgate check: reading the token from stdin: %v\n", err)
				return 2
			}
			token = strings.TrimSpace(string(b))
		}
		return checkToken(ctx, c, token, toolsFile, stdout)
	}
	r := &checkReport{w: stdout}
	r.configuration(c)
	r.issuer(ctx, c)
	for _, w := range c.warnings() {
		r.warn(w.what, w.fix)
	}
	r.worker(ctx, c)
	r.isolation(ctx, c)
	r.caps(c)
	r.tls(c)
	r.listeners(c)
	if r.problems > 0 {
		fmt.Fprintf(stdout, "\n%s found.\n", problems(r.problems))
		return 1
	}
	fmt.Fprintln(stdout, "\nAll checks passed.")
	return 0
}

// checkReport prints check's lines, OK, WARNING or PROBLEM with its fix, and counts the
// problems.
type checkReport struct {
	w        io.Writer
	problems int
}

func (r *checkReport) ok(what string) { fmt.Fprintf(r.w, "OK       %s\n", what) }

func (r *checkReport) warn(what, fix string) {
	fmt.Fprintf(r.w, "WARNING  %s\n         fix: %s\n", what, fix)
}

func (r *checkReport) bad(what, fix string) {
	r.problems++
	fmt.Fprintf(r.w, "PROBLEM  %s\n         fix: %s\n", what, fix)
}

func (r *checkReport) configuration(c *Config) {
	errs := c.validate()
	for _, e := range errs {
		r.bad(e.Error(), "correct the setting (file key, --flag or GEMGATE_ environment variable of the same name)")
	}
	if len(errs) == 0 {
		r.ok("configuration is valid")
		r.ok(telemetry.Describe(c.tracing(), os.Getenv))
	}
}

// issuer loads the issuer's discovery document and signing keys, as serving would.
func (r *checkReport) issuer(ctx context.Context, c *Config) {
	if c.Auth != "oidc" || c.Issuer == "" {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	// NewVerifier fails unless it loads the keys; the audience is of no account here.
	_, err := auth.NewVerifier(ctx, auth.Config{Issuer: c.Issuer, JWKSURL: c.JWKSURL, Audiences: []string{"check"}, AllowInsecureHTTP: c.AllowInsecure})
	if c.JWKSURL != "" {
		// With jwks_url no discovery document is read: the keys URL is what must answer.
		if err != nil {
			r.bad(fmt.Sprintf("issuer %s: %v", c.Issuer, err), "make sure jwks_url ("+c.JWKSURL+") is right and reachable from here and serves the issuer's JWKS, or leave jwks_url out to find the keys through the issuer's discovery document")
			return
		}
		r.ok("issuer " + c.Issuer + ": signing keys loaded from jwks_url " + c.JWKSURL)
		return
	}
	if named, ok := auth.IssuerNamedOtherwise(err); ok {
		r.bad(fmt.Sprintf("issuer %s: %v", c.Issuer, err), "set issuer to "+strconv.Quote(named)+", exactly as the identity provider names itself (tokens carry it in iss)")
		return
	}
	if err != nil {
		r.bad(fmt.Sprintf("issuer %s: %v", c.Issuer, err), "make sure the issuer URL is right and reachable from here, and that it serves /.well-known/openid-configuration and its JWKS")
		return
	}
	r.ok("issuer " + c.Issuer + " reachable; signing keys loaded")
}

func (r *checkReport) worker(ctx context.Context, c *Config) {
	switch c.Worker {
	case "demo":
		r.ok("worker: built-in demo")
	case "command":
		if len(c.WorkerCommand) == 0 {
			return
		}
		if p, err := exec.LookPath(c.WorkerCommand[0]); err != nil {
			r.bad(fmt.Sprintf("worker command %q: %v", c.WorkerCommand[0], err), "install it or give its full path in worker_command")
		} else {
			r.ok("worker command found: " + p)
		}
	case "gemstone":
		r.gemstone(ctx, c)
	}
}

func (r *checkReport) tls(c *Config) {
	if c.TLSCert == "" || c.TLSKey == "" {
		return
	}
	if _, err := tls.LoadX509KeyPair(c.TLSCert, c.TLSKey); err != nil {
		r.bad("TLS files: "+err.Error(), "point tls_cert and tls_key at a readable PEM certificate and its matching key")
		return
	}
	r.ok("TLS certificate and key load and match")
}

// listeners checks that the addresses serve would listen on are free.
func (r *checkReport) listeners(c *Config) {
	for _, l := range []struct{ key, addr string }{{"listen", c.Listen}, {"metrics_listen", c.MetricsListen}} {
		if l.addr == "off" || l.addr == "" {
			continue
		}
		ln, err := net.Listen("tcp", l.addr)
		if err != nil {
			r.bad(fmt.Sprintf("cannot listen on %s: %v", l.addr, err), fmt.Sprintf("stop what uses the address, or change %s (--%s, %s)", l.key, flagName(l.key), envName(l.key)))
			continue
		}
		ln.Close()
		r.ok("address " + l.addr + " is free")
	}
}

// healthCheck is `gemgate check --health URL`: a container health check for images without a
// shell or curl. It exits 0 only when the URL answers 200, 1 when it does not, and 2 when URL
// is not an http or https URL with a host (a health check written wrong, not a replica down).
func healthCheck(ctx context.Context, url string, stdout io.Writer) int {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil || (req.URL.Scheme != "http" && req.URL.Scheme != "https") || req.URL.Host == "" {
		// net/url's own words ("first path segment in URL cannot contain colon", for a URL
		// without its scheme) do not say what to write. The URL is shown without a password
		// it may hold, and not at all when it does not parse.
		shown := "the health URL"
		if req != nil {
			shown = strconv.Quote(req.URL.Redacted())
		}
		fmt.Fprintf(stdout, "PROBLEM  %s is not an http or https URL with a host, e.g. http://127.0.0.1:8080/healthz\n", shown)
		return 2
	}
	resp, err := http.DefaultClient.Do(req)
	if err == nil {
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			err = fmt.Errorf("%s answered %s", req.URL.Redacted(), resp.Status)
		}
	}
	if err != nil {
		fmt.Fprintf(stdout, "PROBLEM  %v\n", err)
		return 1
	}
	fmt.Fprintf(stdout, "OK       %s\n", req.URL.Redacted())
	return 0
}
