package main

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"net/url"
	"os"
	"path"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/gemgate/gemgate/auth"
	"github.com/gemgate/gemgate/gateway/limit"
	"github.com/gemgate/gemgate/gateway/sessions"
	"github.com/gemgate/gemgate/policy"
	"github.com/gemgate/gemgate/telemetry"
	"github.com/gemgate/gemgate/worker/demo"
)

// validate lists every problem of the configuration at once.
func (c *Config) validate() []error {
	loopback := auth.IsLoopbackAddr(c.Listen)
	var p problemList
	p.addErr(c.checkChoices()...)
	c.validateEndpoint(&p, loopback)
	c.validateAuth(&p, loopback)
	c.validateWorker(&p)
	c.validateLimits(&p)
	return p
}

// validateEndpoint checks where gemgate listens and what it calls itself: address, path,
// public URL, TLS.
func (c *Config) validateEndpoint(p *problemList, loopback bool) {
	if _, _, err := net.SplitHostPort(c.Listen); err != nil {
		p.add("listen: %q is not host:port", c.Listen)
	}
	// A "." or ".." segment is removed by clients before they send the path: the resource URL
	// would name one path and clients reach another. With the pattern's non-empty segments,
	// the path has one exactly when path.Clean changes it.
	if !mcpPathPattern.MatchString(c.MCPPath) || path.Clean(c.MCPPath) != c.MCPPath {
		p.add("mcp_path: %q must be a plain path like /mcp or /team/mcp: segments of letters, digits, '.', '_', '~' and '-', none of them . or ..", c.MCPPath)
	} else if reservedPath(c.MCPPath) {
		p.add("mcp_path: %q is one of gemgate's own paths (/healthz, /readyz, /.well-known/...)", c.MCPPath)
	}
	public := absoluteHTTPURL(c.PublicURL)
	if c.PublicURL != "" && public == nil {
		p.add("public_url: %q must be an absolute http(s) URL without query or fragment", c.PublicURL)
	} else if c.PublicURL == "" && !loopback {
		p.add("public_url: required when listening on %s (it is the token audience and is never guessed from requests)", c.Listen)
	}
	tls := c.TLSCert != "" || c.TLSKey != ""
	p.addIf((c.TLSCert == "") != (c.TLSKey == ""), "tls_cert and tls_key: give both or neither")
	p.addIf(!loopback && !tls && !c.AllowInsecure && (public == nil || public.Scheme != "https"),
		"listen: plain HTTP on %s needs public_url with https behind a TLS proxy, tls_cert/tls_key, or allow_insecure_http", c.Listen)
}

// absoluteHTTPURL is s parsed when it is an absolute http(s) URL without query or fragment,
// or nil.
func absoluteHTTPURL(s string) *url.URL {
	u, err := url.Parse(s)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.RawQuery != "" || u.Fragment != "" {
		return nil
	}
	return u
}

// validateAuth checks how tokens are verified.
func (c *Config) validateAuth(p *problemList, loopback bool) {
	switch c.Auth {
	case "oidc":
		p.addIf(c.Issuer == "", "issuer: required with auth=oidc (e.g. https://keycloak.example.com/realms/team)")
		// The keys decide who is who, as much as the issuer: the same rule.
		p.addErr(c.secureURL("issuer", c.Issuer), c.secureURL("jwks_url", c.JWKSURL))
	case "none":
		// Every request acts as the local user: only the local user may reach gemgate.
		p.addIf(!loopback, "auth: none is only allowed on a loopback listen address, not %s", c.Listen)
		// public_url's host is judged as a listen address's, by the rule listen was held to.
		u, err := url.Parse(c.PublicURL)
		p.addIf(c.PublicURL != "" && (err != nil || !auth.IsLoopbackAddr(net.JoinHostPort(u.Hostname(),
			"0"))), "auth: none is only for a gateway its own user reaches on loopback, but public_url %q names another host", c.PublicURL)
		p.addIf(len(c.TrustedProxy) > 0,
			"auth: none cannot sit behind a proxy (trusted_proxies is set): every client of the proxy would act as the local user")
		p.addIf(slices.Contains(c.Origins,
			"*"), "auth: none with allowed_origins \"*\" lets any web page the user opens act as the user; name the origins")
	}
	p.addIf(c.KeyRefresh < time.Second,
		"key_refresh_interval: must be at least 1s (it bounds how often a flood of unknown keys can make gemgate fetch)")
	p.addIf(c.UserClaim == "", "user_claim: must not be empty")
}

// validateWorker checks what workers run, with which credential, isolation and pool.
func (c *Config) validateWorker(p *problemList) {
	switch c.Worker {
	case "command":
		p.addIf(len(c.WorkerCommand) == 0, "worker_command: required with worker=command")
	case "gemstone":
		c.validateGemStone(p)
	}
	// The token endpoint is sent gemgate's client secret and each caller's token.
	p.addErr(c.secureURL("exchange_token_url", c.ExchangeTokenURL))
	if c.WorkerCredential == "exchange" {
		var missing []string
		for _, s := range []struct{ key, value string }{{"exchange_client_id", c.ExchangeClientID},
			{"exchange_client_secret", c.ExchangeSecret}, {"exchange_audience", c.ExchangeAudience}} {
			if s.value == "" {
				missing = append(missing, s.key)
			}
		}
		// Name what is missing: a config file that sets the id and audience and leaves the
		// secret to the environment meets this when the variable did not reach gemgate.
		notSet := "; not set: " + strings.Join(missing, ", ")
		if len(missing) == 3 {
			notSet = ""
		}
		p.addIf(len(missing) > 0, "worker_credential: exchange needs exchange_client_id, exchange_client_secret and exchange_audience%s%s",
			notSet, exchangeSecretHint(missing))
	}
	// Every exchange would ask for a token gemgate itself accepts, which it refuses to hand a
	// worker: say so now, not at each user's first request.
	p.addIf(c.WorkerCredential == "exchange" && c.ExchangeAudience != "" &&
		slices.Contains(c.audiences(resourceURL(c, c.Listen)), c.ExchangeAudience),
		"exchange_audience: %q is one of gemgate's own audiences (public_url, audiences); name the backend's", c.ExchangeAudience)
	p.addIf(c.WorkerCredential != "none" && c.Auth != "oidc", "worker_credential: %s needs auth=oidc", c.WorkerCredential)

	c.validateIsolation(p)
	_, capErrs := c.workerCapsValues()
	p.addErr(capErrs...)
	p.addErr(c.poolSettings().Validate())
	p.addIf(c.WorkerIdleTimeout == 0, "worker_idle_timeout: must be positive")
}

// validateLimits checks the rest: proxies, origins, trace, log, limits, lifetime, policy,
// metrics.
func (c *Config) validateLimits(p *problemList) {
	_, proxyErrs := trustedPrefixes(c.TrustedProxy)
	p.addErr(proxyErrs...)
	for _, o := range c.Origins {
		if o == "*" {
			continue
		}
		u, err := url.Parse(o)
		switch {
		case err != nil || u.Host == "":
			p.add("allowed_origins: %q is not an origin like https://app.example.com", o)
		case browserOrigin(u) != o:
			// The gate compares the Origin header with the entry as written. A path (a URL
			// copied from the address bar ends in /) is what is after the port.
			hint := ""
			if b := browserOrigin(u); b != "" {
				hint = fmt.Sprintf("; write %q", b)
			}
			p.add("allowed_origins: %q is not an origin as a browser sends it (scheme and host in lower case, no default port, nothing after the port), so it would allow no page%s", o, hint)
		}
	}
	_, traceErr := c.traceLimit()
	_, logErr := newLogger(c, nil)
	p.addErr(c.tracing().Validate(os.Getenv), traceErr, logErr)
	p.addIf(c.MaxBodyBytes <= 0, "max_body_bytes: must be positive")
	p.addIf(c.ShutdownGrace < 0, "shutdown_grace: must not be negative")
	p.addIf(c.DrainDelay < 0, "drain_delay: must not be negative (0 turns the drain off)")
	for _, d := range []struct {
		key string
		v   time.Duration
	}{
		{"idle_timeout", c.IdleTimeout}, {"streamless_idle_timeout", c.StreamlessIdle}, {"stream_loss_grace", c.StreamLossGrace},
		{"max_session_lifetime", c.MaxSessionLifetime}, {"request_timeout", c.RequestTimeout},
	} {
		p.addIf(d.v < 0, "%s: must not be negative (0 turns it off)", d.key)
	}
	p.addErr(c.lifetime().Validate())
	p.addIf(c.MaxSessions < 0 || c.MaxSessionsPerUser < 0 || c.MaxConnections < 0,
		"max_sessions, max_sessions_per_user and max_connections must not be negative (0 lifts a cap)")
	p.addIf(c.MaxUserNames < 1, "max_user_names: must be at least 1")
	p.addIf(c.WorkerStartRate < 0, "worker_start_rate: must not be negative (0 lifts the limit)")
	p.addIf(c.WorkerStartRate > 0 && c.WorkerStartBurst < 1,
		"worker_start_burst: must be at least 1 while worker_start_rate is set")
	p.addIf(c.InputRequiredTimeout <= 0, "input_required_timeout: must be positive (a parked call waits for its client's retry this long)")
	p.addIf(c.ReadTimeout < time.Second,
		"read_timeout: must be at least 1s (every request must be able to arrive, and none may take forever)")
	_, policyErr := policy.New(c.policyConfig())
	p.addErr(policyErr)
	if c.MetricsListen != "off" {
		if _, _, err := net.SplitHostPort(c.MetricsListen); err != nil {
			p.add("metrics_listen: %q is not host:port or off", c.MetricsListen)
		}
	}
}

// browserOrigin is the origin of u as a browser serializes it in an Origin header (RFC 6454):
// scheme and host in lower case, the port unless it is the scheme's default; "" when u holds
// what no origin does (user info, a query, a fragment).
func browserOrigin(u *url.URL) string {
	if u.User != nil || u.RawQuery != "" || u.ForceQuery || u.Fragment != "" || u.Opaque != "" {
		return ""
	}
	scheme, host, port := strings.ToLower(u.Scheme), strings.ToLower(u.Hostname()), u.Port()
	if (scheme == "https" && port == "443") || (scheme == "http" && port == "80") {
		port = ""
	}
	if strings.Contains(host, ":") {
		host = "[" + host + "]"
	}
	if port != "" {
		host += ":" + port
	}
	return scheme + "://" + host
}

// problemList collects the problems of a configuration, to be reported together.
type problemList []error

func (p *problemList) add(format string, a ...any) { *p = append(*p, fmt.Errorf(format, a...)) }

// addIf adds the problem format describes when bad.
func (p *problemList) addIf(bad bool, format string, a ...any) {
	if bad {
		p.add(format, a...)
	}
}

// addErr adds each error but nil, a joined one (a validator that reports several problems at
// once) as one problem per error, so that counts match the lines printed.
func (p *problemList) addErr(errs ...error) {
	for _, e := range errs {
		if j, ok := e.(interface{ Unwrap() []error }); ok {
			p.addErr(j.Unwrap()...)
		} else if e != nil {
			*p = append(*p, e)
		}
	}
}

// problems is "1 problem" or "n problems".
func problems(n int) string {
	if n == 1 {
		return "1 problem"
	}
	return fmt.Sprintf("%d problems", n)
}

// listenError explains a failure to listen in terms of the setting that chose the address,
// so that a busy port says how to pick another.
func listenError(key, addr string, err error) error {
	if errors.Is(err, syscall.EADDRINUSE) {
		return fmt.Errorf("%s: %s is already in use: stop what listens there, or choose another address with --%s (%s)", key, addr, flagName(key), envName(key))
	}
	return fmt.Errorf("%s: cannot listen on %s: %w (change it with --%s or %s)", key, addr, err, flagName(key), envName(key))
}

func (c *Config) tracing() telemetry.Settings {
	return telemetry.Settings{Endpoint: c.TraceEndpoint, User: c.TraceUser, Baggage: c.TraceBaggage}
}

func (c *Config) traceLimit() (int, error) {
	if strings.EqualFold(c.TraceLimit, "none") {
		return 0, nil
	}
	n, err := strconv.Atoi(c.TraceLimit)
	if err != nil || n <= 0 {
		return 0, errors.New("trace_limit: must be a positive number of bytes or none")
	}
	return n, nil
}

// orOff is v, or off when v is 0: in the configuration 0 turns a rule off or lifts a cap,
// which the gateway's packages spell off (sessions.Never, limit.None), their zero meaning
// "the default".
func orOff[T time.Duration | int | float64](v, off T) T {
	if v == 0 {
		return off
	}
	return v
}

// lifetime is the session lifetime policy. 0 turns a rule off (for streamless_idle_timeout:
// falls back to idle_timeout; for stream_loss_grace: no grace).
func (c *Config) lifetime() sessions.Lifetime {
	l := sessions.DefaultLifetime()
	l.IdleTimeout = orOff(c.IdleTimeout, sessions.Never)
	l.StreamlessIdleTimeout = orOff(c.StreamlessIdle, sessions.Never)
	l.StreamLossGrace = orOff(c.StreamLossGrace, sessions.Never)
	l.MaxSessionLifetime = orOff(c.MaxSessionLifetime, sessions.Never)
	l.RequestTimeout = orOff(c.RequestTimeout, sessions.Never)
	l.MaxCallsPerSession = c.MaxCallsPerSession
	if l.IdleTimeout > 0 && l.ProbeLead >= l.IdleTimeout {
		l.ProbeLead = l.IdleTimeout / 6 // idle_timeout of five minutes or less: probe a sixth before
	}
	if l.ProbeLead > 0 && l.ProbeTimeout >= l.ProbeLead {
		// An unanswered ping must be able to decide before the idle deadline does, with room
		// for the ping going out up to a reaper tick late and the verdict landing a tick late.
		l.ProbeTimeout = l.ProbeLead / 4
	}
	return l
}

// limits are the session caps and start rate; 0 lifts a cap.
func (c *Config) limits() limit.Settings {
	return limit.Settings{
		MaxSessions:        orOff(c.MaxSessions, limit.None),
		MaxSessionsPerUser: orOff(c.MaxSessionsPerUser, limit.None),
		WorkerStartRate:    orOff(c.WorkerStartRate, limit.None),
		WorkerStartBurst:   c.WorkerStartBurst,
	}
}

func (c *Config) policyConfig() policy.Config {
	readOnly := c.ReadOnlyTools
	if c.Worker == "demo" && len(readOnly) == 0 && !c.TrustHints {
		// The built-in demo vouches for its own browsing tools; any other worker's tools stay
		// hidden from read-only sessions until the operator lists them.
		readOnly = demo.ReadOnlyTools
	}
	return policy.Config{
		RequiredScopes:     c.RequiredScopes,
		WriteScope:         c.WriteScope,
		ExtraScopes:        c.ExtraScopes,
		ReadOnlyTools:      readOnly,
		TrustReadOnlyHints: c.TrustHints,
		Rules:              c.Rules[policy.KindTool],
		PromptRules:        c.Rules[policy.KindPrompt],
		ResourceRules:      c.Rules[policy.KindResource],
	}
}

// trustedPrefixes reads trusted_proxies: CIDRs, and addresses as prefixes of one address.
func trustedPrefixes(list []string) ([]netip.Prefix, []error) {
	var out []netip.Prefix
	var errs []error
	for _, p := range list {
		if pr, err := netip.ParsePrefix(p); err == nil {
			out = append(out, pr)
		} else if a, err := netip.ParseAddr(p); err == nil {
			out = append(out, netip.PrefixFrom(a, a.BitLen()))
		} else {
			errs = append(errs, fmt.Errorf("trusted_proxies: %q is not a CIDR or an address", p))
		}
	}
	return out, errs
}

// checkChoices refuses a setting whose value is not one of its choices (the choices tag of
// Config), naming them: the one place these words are listed for validation.
func (c *Config) checkChoices() []error {
	var errs []error
	for _, f := range c.fields() {
		if f.choices == nil {
			continue
		}
		if v := f.v.String(); !slices.Contains(f.choices, v) {
			last := len(f.choices) - 1
			errs = append(errs, fmt.Errorf("%s: %q is not %s or %s", f.key, v, strings.Join(f.choices[:last], ", "), f.choices[last]))
		}
	}
	return errs
}

// mcpPathPattern is a plain absolute path of one or more segments; nothing chi would read
// as a pattern ({, *), no query, no empty segment, no trailing slash.
var mcpPathPattern = regexp.MustCompile(`^(/[A-Za-z0-9._~-]+)+$`)

// reservedPath reports whether p is, or is under, a path gemgate serves itself.
func reservedPath(p string) bool {
	return slices.ContainsFunc([]string{"/healthz", "/readyz", "/.well-known"}, func(own string) bool {
		return p == own || strings.HasPrefix(p, own+"/")
	})
}

// secureURL refuses raw, the value of key, unless it is empty, an absolute https URL, or http
// on loopback or with allow_insecure_http: the rule for every URL gemgate trusts keys or sends
// secrets to.
func (c *Config) secureURL(key, raw string) error {
	if raw == "" || auth.SecureURL(raw, c.AllowInsecure) {
		return nil
	}
	return fmt.Errorf("%s: %q must be an https URL (http only on loopback or with allow_insecure_http)", key, raw)
}

// exchangeSecretHint says where the exchange client's secret goes when it is missing: the
// command line refuses it.
func exchangeSecretHint(missing []string) string {
	if slices.Contains(missing, "exchange_client_secret") {
		return " (give the secret as GEMGATE_EXCHANGE_CLIENT_SECRET, or in a config file only gemgate may read)"
	}
	return ""
}
