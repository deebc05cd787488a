package main

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/gemgate/gemgate/auth"
	"github.com/gemgate/gemgate/policy"
	"github.com/gemgate/gemgate/worker"
	"github.com/gemgate/gemgate/worker/gemstone"
)

// takeFlag takes --name <value> (or --name=<value>) out of args; what says what the value
// is. For --token, "-" means: read the token from stdin, which keeps it out of the shell
// history and the process list.
func takeFlag(args []string, name, what string) (value string, rest []string, found bool, err error) {
	for i := 0; i < len(args); i++ {
		a := args[i]
		n, v, hasValue := strings.Cut(strings.TrimLeft(a, "-"), "=")
		if !strings.HasPrefix(a, "-") || n != name {
			rest = append(rest, a)
			continue
		}
		if found {
			return "", nil, true, fmt.Errorf("--%s given twice", name)
		}
		found = true
		if !hasValue {
			if i+1 >= len(args) {
				return "", nil, true, fmt.Errorf("--%s needs a value (%s)", name, what)
			}
			i++
			v = args[i]
		}
		value = v
	}
	return value, rest, found, nil
}

// checkToken is `gemgate check --token <JWT> [--tools FILE]`: claim by claim, would gemgate
// with this configuration accept the token, and why not; with a worker's tools/list result
// in FILE (or its prompts/list, resources/list or resources/templates/list result), which of
// its tools (prompts, resources) the token may list and use, and what decided each. Exit 0
// when it would, 1 when not, 2 when the configuration itself is wrong.
func checkToken(ctx context.Context, c *Config, raw, toolsFile string, stdout io.Writer) int {
	if errs := c.validate(); len(errs) > 0 {
		fmt.Fprintln(stdout, configErrors(errs))
		return 2
	}
	if c.Auth != "oidc" {
		fmt.Fprintf(stdout, "auth is %q: gemgate checks no token at all\n", c.Auth)
		return 2
	}
	pol, _ := policy.New(c.policyConfig()) // validate built it without error
	// The verifier serve would have. Without public_url, serve's resource is the address its
	// listener binds: a host name resolves as net.Listen resolves it (localhost to 127.0.0.1).
	addr := c.Listen
	if a, err := net.ResolveTCPAddr("tcp", c.Listen); err == nil && c.PublicURL == "" {
		addr = a.String()
	}
	cfg := c.verifierConfig(resourceURL(c, addr))
	cfg.CacheSize = -1
	cctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	ex, err := auth.Explain(cctx, cfg, raw)
	if err != nil {
		fmt.Fprintln(stdout, err)
		return 2
	}
	fmt.Fprintf(stdout, "Token checked against issuer %s and audience %s\n\n", c.Issuer, strings.Join(cfg.Audiences, ", "))
	for _, f := range ex.Findings {
		fmt.Fprintf(stdout, "%-8s %-9s %s\n", cmp.Or(statusWords[f.Status], "INFO"), f.Item, f.Detail)
	}
	code := tokenVerdict(stdout, c, pol, ex)
	if code != 0 || toolsFile == "" {
		return code
	}
	b, err := os.ReadFile(toolsFile)
	p := ex.Principal
	if err == nil {
		err = pol.ExplainTools(stdout, pol.DecideToken(policy.Token{Subject: p.Subject, User: p.User, Scopes: p.Scopes, Claims: p.Claims()}), b)
	}
	if err != nil {
		fmt.Fprintf(stdout, "--tools: %v\n", err)
		if errors.Is(err, policy.ErrMalformedList) && !isListResult(b) {
			fmt.Fprintln(stdout, `         give the list's result object, {"tools": [...]} (or prompts, resources, resourceTemplates), as the MCP Inspector CLI prints it; of a whole JSON-RPC answer, only its "result"`)
		}
		return 2
	}
	return 0
}

// isListResult: b is a JSON object with a list of a list result (its shape is right, and what
// is malformed is in an item).
func isListResult(b []byte) bool {
	var top map[string]json.RawMessage
	if json.Unmarshal(b, &top) != nil {
		return false
	}
	for _, key := range []string{"tools", "prompts", "resources", "resourceTemplates"} {
		if v := bytes.TrimSpace(top[key]); len(v) > 0 && v[0] == '[' {
			return true
		}
	}
	return false
}

// tokenVerdict prints what serving would do with the token ex explains, after the checks
// that come after verification (required scopes, the user name), and returns the exit code.
func tokenVerdict(stdout io.Writer, c *Config, pol *policy.Policy, ex auth.Explanation) int {
	verdict := ex.Verdict
	var missing []string
	var nameErr error
	if verdict == nil {
		missing = auth.MissingScopes(ex.Principal.Scopes, pol.RequiredScopes())
		if len(missing) > 0 {
			fmt.Fprintf(stdout, "%-8s %-9s lacks the required scope(s) %s (required_scopes)\n", "PROBLEM", "scope", strings.Join(missing, " "))
		}
		if nameErr = userNameCheck(c)(ex.Principal.User); nameErr != nil {
			fmt.Fprintf(stdout, "%-8s %-9s %v: no worker can act as this user\n", "PROBLEM", c.UserClaim, nameErr)
		}
	}
	fmt.Fprintln(stdout)
	switch {
	case errors.Is(verdict, auth.ErrKeysUnavailable):
		fmt.Fprintln(stdout, "Verdict: cannot tell. The claims pass, but the signature was not checked: the issuer's keys could not be loaded from here.")
		fmt.Fprintln(stdout, "         A gemgate that cannot load them either answers 503 with Retry-After until it can.")
		return 1
	case verdict != nil:
		fmt.Fprintf(stdout, "Verdict: gemgate would refuse this token (401 invalid_token: %s).\n", auth.Describe(verdict))
		if !ex.SignatureChecked {
			fmt.Fprintln(stdout, "         The signature was not checked: the issuer's keys could not be loaded from here.")
		}
		return 1
	case nameErr != nil:
		fmt.Fprintf(stdout, "Verdict: gemgate would refuse this token (403 invalid_token: token claim %s: %v).\n", c.UserClaim, nameErr)
		return 1
	case len(missing) > 0:
		fmt.Fprintf(stdout, "Verdict: gemgate would refuse this token (403 insufficient_scope: missing %s).\n", strings.Join(missing, " "))
		return 1
	}
	mode := "read-only (no " + pol.WriteScope() + ")"
	if slices.Contains(ex.Principal.Scopes, pol.WriteScope()) {
		mode = "read-write"
	}
	fmt.Fprintf(stdout, "Verdict: gemgate would accept this token: user %q, %s.\n", ex.Principal.User, mode)
	return 0
}

// statusWords name the findings' statuses; the rest are INFO.
var statusWords = map[auth.FindingStatus]string{auth.FindingOK: "OK", auth.FindingProblem: "PROBLEM", auth.FindingNotChecked: "SKIPPED"}

// userNameCheck is the launcher's judgement of a user name under c, as serve makes it at
// authentication (worker.CommandLauncher.CheckUser). The command matters: {user} in
// worker_command or worker_user decides the check, and the GemStone relay always has it.
func userNameCheck(c *Config) func(string) error {
	l := &worker.CommandLauncher{WorkerUser: c.WorkerUser}
	switch c.Worker {
	case "command":
		l.Command = c.WorkerCommand
	case "gemstone":
		l.Command = (&gemstone.Relay{}).Command()
	}
	return l.CheckUser
}
