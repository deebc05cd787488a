package main

import (
	"cmp"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"golang.org/x/time/rate"

	"github.com/gemgate/gemgate/auth"
	"github.com/gemgate/gemgate/auth/exchange"
	"github.com/gemgate/gemgate/gateway"
	"github.com/gemgate/gemgate/gateway/limit"
	"github.com/gemgate/gemgate/gateway/metrics"
	"github.com/gemgate/gemgate/gateway/trace"
	"github.com/gemgate/gemgate/internal/httperrorlog"
	"github.com/gemgate/gemgate/policy"
	"github.com/gemgate/gemgate/pool"
	"github.com/gemgate/gemgate/telemetry"
	"github.com/gemgate/gemgate/worker"
	"github.com/gemgate/gemgate/worker/gemstone"
)

func serveCommand(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	c, err := load("serve", args)
	if err != nil {
		return err
	}
	if errs := c.validate(); len(errs) > 0 {
		return configErrors(errs)
	}
	log, _ := newLogger(c, stderr)
	c.logWarnings(log)
	ln, err := net.Listen("tcp", c.Listen)
	if err != nil {
		return listenError("listen", c.Listen, err)
	}
	srv, err := build(ctx, c, ln, log)
	if err != nil {
		ln.Close()
		return err
	}
	return srv.run(ctx)
}

// configErrors reports the problems of a problemList, one a line.
func configErrors(errs []error) error {
	var b strings.Builder
	fmt.Fprintf(&b, "the configuration has %s:", problems(len(errs)))
	for _, e := range errs {
		for _, line := range strings.Split(e.Error(), "\n") {
			fmt.Fprintf(&b, "\n  - %s", line)
		}
	}
	return errors.New(b.String())
}

// server is a built gateway with its listeners.
type server struct {
	cfg       *Config
	log       *slog.Logger
	ln        net.Listener
	publicURL string
	gw        *gateway.Gateway
	http      *http.Server
	metrics   *http.Server
	metricsLn net.Listener
	errorLog  *httperrorlog.Log // the servers' ErrorLog: clipped and rate limited
	reg       *prometheus.Registry
	tracing   *telemetry.Tracing // nil: off
	relay     *gemstone.Relay    // with worker=gemstone
	// devWorkersDir: gemgate dev as root with no sandbox runs its workers as devWorkerAccount,
	// with this data directory; "" otherwise.
	devWorkersDir string
	// sandbox is the worker sandbox in force: "bwrap" or "none".
	sandbox string
}

// resourceURL is public_url, or the URL of the MCP endpoint at addr, the address gemgate
// listens on (an IP and port, as a listener reports it).
func resourceURL(c *Config, addr string) string {
	if c.PublicURL != "" {
		return strings.TrimSuffix(c.PublicURL, "/")
	}
	scheme := "http"
	if c.TLSCert != "" {
		scheme = "https"
	}
	return scheme + "://" + addr + c.MCPPath
}

// build makes the gateway: verifier, policy, workers, metrics. Problems that need the outside
// world (an unreachable issuer) surface here.
func build(ctx context.Context, c *Config, ln net.Listener, log *slog.Logger) (*server, error) {
	s := &server{cfg: c, log: log, ln: ln, publicURL: resourceURL(c, ln.Addr().String()), reg: prometheus.NewRegistry()}
	s.reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	pol, err := policy.New(c.policyConfig())
	if err != nil {
		return nil, err
	}
	opts := s.gatewayOptions(pol)
	ts := c.tracing()
	ts.Log = log
	if opts.Tracing, err = telemetry.New(ctx, ts); err != nil {
		return nil, err
	}
	if s.tracing = opts.Tracing; s.tracing != nil {
		log.Info(telemetry.Describe(c.tracing(), os.Getenv))
	}

	launcher, err := s.launcher(ctx)
	if err != nil {
		return nil, err
	}
	verifier, err := s.authentication(ctx, &opts, pol, launcher.CheckUser)
	if err != nil {
		return nil, err
	}
	opts.Workers = launcher
	if c.Worker == "gemstone" {
		opts.Workers = gemstoneLauncher{launcher, s.relay}
	}
	s.readiness(&opts, verifier, launcher)
	if s.gw, err = gateway.New(opts); err != nil {
		return nil, err
	}
	if err := s.servers(); err != nil {
		s.gw.Close()
		return nil, err
	}
	return s, nil
}

// gatewayOptions are the gateway's settings from the configuration, but for how requests
// are authenticated and which workers serve them.
func (s *server) gatewayOptions(pol *policy.Policy) gateway.Options {
	c, log := s.cfg, s.log
	proxies, _ := trustedPrefixes(c.TrustedProxy)
	opts := gateway.Options{
		MCPPath:              c.MCPPath,
		PublicURL:            s.publicURL,
		Policy:               pol,
		AllowedOrigins:       c.Origins,
		AllowLoopbackOrigins: auth.IsLoopbackAddr(c.Listen),
		TrustedProxies:       proxies,
		MaxBodyBytes:         c.MaxBodyBytes,
		Lifetime:             c.lifetime(),
		Limits:               c.limits(),
		ReadTimeout:          c.ReadTimeout,
		OnTokenExpiry:        c.OnTokenExpiry,
		InputRequiredTimeout: c.InputRequiredTimeout,
		Pool:                 c.poolSettings(),
		PostAnswers:          c.PostAnswers,
		Logger:               log,
		Metrics:              metrics.New(s.reg),
	}
	if c.TraceMessages {
		limit, _ := c.traceLimit()
		opts.Trace = &trace.Tracer{Logger: log, Limit: limit}
		log.Info("message trace is on", "limit", c.TraceLimit)
	}
	return opts
}

// authentication sets how requests are authenticated: auth=none makes every request the
// local user; auth=oidc verifies bearer tokens against the issuer, which may still be down
// (the verifier then keeps trying), and serves the RFC 9728 metadata.
//
// checkUser is the launcher's judgement of a user name: a token whose user no worker can act
// as is refused at authentication. With a user_claim other than sub, each user name is bound
// to the first subject that presents it (auth.UserBindings).
func (s *server) authentication(ctx context.Context, opts *gateway.Options, pol *policy.Policy, checkUser func(string) error) (*auth.Verifier, error) {
	c, log := s.cfg, s.log
	authMetrics := auth.NewMetrics(s.reg)
	if c.Auth == "none" {
		p := auth.Principal{Issuer: "local", Subject: osUser(), User: osUser(), Scopes: pol.ScopesSupported()}
		opts.Authenticate = auth.LocalUser(p, log)
		log.Warn("authentication is off (auth=none): every request acts as the local user, and requests from another account of this host, through a proxy or to a name other than loopback are refused", "user", p.User)
		return nil, nil
	}
	// The issuer may be down at start (compose and Kubernetes start things in any order):
	// gemgate serves anyway, answers 503 to tokens and is not ready until the keys load,
	// retried in the background for as long as ctx lives.
	cfg := c.verifierConfig(s.publicURL)
	cfg.KeyRefreshInterval, cfg.Logger, cfg.OnKeyRefresh = c.KeyRefresh, log, authMetrics.KeysFetched
	verifier, err := auth.StartVerifier(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("issuer %s: %w", c.Issuer, err)
	}
	if err := verifier.Ready(ctx); err != nil {
		if named, ok := auth.IssuerNamedOtherwise(err); ok {
			// The issuer answered: waiting will not help, the setting must change.
			log.Warn("issuer names itself otherwise in its discovery document; serving anyway (503 for tokens, /readyz not ready) and retrying in the background",
				"issuer", c.Issuer, "issuer_named", named, "fix", "set issuer to "+strconv.Quote(named)+", exactly as the identity provider names itself (tokens carry it in iss)", "error", err)
		} else {
			log.Warn("issuer unreachable at start; serving anyway (503 for tokens, /readyz not ready) and retrying in the background", "issuer", c.Issuer, "error", err)
		}
	}
	var users *auth.UserBindings
	if c.UserClaim != "sub" {
		users = auth.NewUserBindings(c.UserClaim, c.MaxUserNames)
	}
	authn := auth.NewAuthenticator(auth.AuthenticatorOptions{
		UserClaim:           c.UserClaim,
		UserName:            checkUser,
		Users:               users,
		Verifier:            verifier,
		ResourceMetadataURL: auth.MetadataURL(s.publicURL),
		RequiredScopes:      pol.RequiredScopes(),
		ChallengeScopes:     pol.ScopesSupported(),
		Logger:              log,
		// The authenticator logs each refusal (why, expected against received);
		// gemgate adds the client address and counts it.
		OnFailure: func(_ *http.Request, reason string) { authMetrics.Failed(reason) },
		RequestLogAttrs: func(r *http.Request) []slog.Attr {
			return []slog.Attr{slog.String("client", gateway.ClientIP(r.Context()).String())}
		},
	})
	opts.Authenticate = authn.Middleware
	opts.InsufficientScope = authn.InsufficientScope
	opts.Metadata = auth.MetadataHandler(auth.Metadata{
		Resource:             s.publicURL,
		AuthorizationServers: []string{c.Issuer},
		ScopesSupported:      pol.ScopesSupported(),
		ResourceName:         "gemgate",
	})
	return verifier, nil
}

// readiness says when /readyz is ready (keys loaded, worker command found) and when it is
// degraded (keys cached while the issuer is unreachable).
func (s *server) readiness(opts *gateway.Options, verifier *auth.Verifier, launcher *worker.CommandLauncher) {
	log := s.log
	opts.Ready = func(ctx context.Context) error {
		if verifier != nil {
			if err := verifier.Ready(ctx); err != nil {
				return notReady{"issuer unreachable: its signing keys are not loaded yet", err}
			}
		}
		if _, err := exec.LookPath(launcher.Command[0]); err != nil {
			return notReady{"worker command not found", fmt.Errorf("worker command: %w", err)}
		}
		return nil
	}
	if verifier != nil {
		// /readyz is anyone's to call: its warning goes to the log at most once a minute.
		warn := &rate.Sometimes{Interval: time.Minute}
		opts.Degraded = func(ctx context.Context) error {
			if err := verifier.Health(ctx); err != nil {
				warn.Do(func() {
					log.Warn("issuer keys cannot be fetched; serving with cached keys (logged at most once a minute)", "error", err)
				})
				return errors.New("issuer unreachable, cached signing keys in use")
			}
			return nil
		}
	}
}

// Bounds of the listeners beyond the configuration.
const (
	maxHeaderBytes = 64 << 10 // request headers; more is answered 431
	// maxStreams is how many requests one HTTP/2 connection (gemgate's own TLS) carries at
	// once, each with up to maxHeaderBytes of headers: net/http's 250 would let one
	// connection hold 250 stalled requests past max_connections, sized per connection.
	maxStreams            = 8
	metricsMaxConnections = 16
)

// servers makes the HTTP servers: the MCP endpoint's and, unless off, the metrics listener's.
func (s *server) servers() error {
	c, log := s.cfg, s.log
	// ReadTimeout bounds a request's arrival from its first byte, body included; net/http
	// lifts it once the request has arrived whole, so it does not cut a long answer or a GET
	// stream, and the gateway closes the connection of a request whose body it did not read.
	// No WriteTimeout: it would cut streams and long calls; the gateway bounds each write of a
	// stream instead.
	// MaxHeaderBytes: max_connections is sized on this bound, which no header gemgate reads
	// comes near; net/http's default would allow a megabyte per connection.
	// ErrorLog: net/http's lines, which any client can provoke and fill with its own text (a
	// TLS handshake's), are clipped and rate limited (internal/httperrorlog).
	s.errorLog = httperrorlog.New(log)
	s.http = &http.Server{
		Handler:           s.gw.Handler(),
		ReadTimeout:       c.ReadTimeout,
		ReadHeaderTimeout: min(10*time.Second, c.ReadTimeout),
		IdleTimeout:       2 * time.Minute,
		MaxHeaderBytes:    maxHeaderBytes,
		HTTP2:             &http.HTTP2Config{MaxConcurrentStreams: maxStreams},
		ErrorLog:          s.errorLog.Logger(),
	}
	if c.Auth == "none" {
		s.http.ConnContext = auth.LocalConnContext // the account check of auth.LocalUser, once per connection
	}
	if c.MetricsListen != "off" {
		ln, err := net.Listen("tcp", c.MetricsListen)
		if err != nil && c.dev && c.MetricsListen == defaults().MetricsListen {
			// dev's default address, when busy, gives way to any free loopback port, chosen by
			// binding so that two gemgates starting at once cannot pick the same one. An address
			// the user chose is kept, busy or not.
			ln, err = net.Listen("tcp", "127.0.0.1:0")
		}
		if err != nil {
			return listenError("metrics_listen", c.MetricsListen, err)
		}
		// A scraper makes a request every few seconds; nobody needs more than a few
		// connections, each bounded in time, out of the descriptors the caps were sized from.
		s.metricsLn = limit.Connections(ln, limit.ConnectionCap{Max: metricsMaxConnections, Logger: log, Setting: "a fixed bound of the metrics listener"})
		mux := http.NewServeMux()
		mux.Handle("/metrics", promhttp.HandlerFor(s.reg, promhttp.HandlerOpts{Registry: s.reg, EnableOpenMetrics: true}))
		s.metrics = &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second, ReadTimeout: 10 * time.Second,
			WriteTimeout: 30 * time.Second, IdleTimeout: time.Minute, MaxHeaderBytes: maxHeaderBytes,
			ErrorLog: s.errorLog.Logger()}
	}
	return nil
}

func (s *server) launcher(ctx context.Context) (*worker.CommandLauncher, error) {
	c := s.cfg
	l := &worker.CommandLauncher{DataDir: c.DataDir}
	switch c.Worker {
	case "demo":
		self, err := os.Executable()
		if err != nil {
			return nil, fmt.Errorf("finding the gemgate binary for the demo worker: %w", err)
		}
		l.Command = []string{self, "worker", "demo"}
		if l.DataDir == "" {
			l.DataDir = defaultDataDir()
		}
	case "command":
		l.Command = c.WorkerCommand
	case "gemstone":
		if err := s.gemstoneCommand(ctx, l); err != nil {
			return nil, err
		}
	}
	switch c.WorkerCredential {
	case "passthrough":
		s.log.Warn("worker_credential=passthrough hands each client's token to its worker; the MCP specification forbids passing tokens through, so use it only for a backend that accepts the gateway's audience")
		l.Credential = worker.PassthroughCredential{}
	case "exchange":
		ex, err := newLazyExchanger(c.Issuer, exchange.Config{TokenURL: c.ExchangeTokenURL, ClientID: c.ExchangeClientID,
			ClientSecret: c.ExchangeSecret, Audience: c.ExchangeAudience,
			GatewayAudiences: c.audiences(s.publicURL), // an issued token for one of these is gemgate's, not the backend's
		}, c.AllowInsecure)
		if err != nil {
			return nil, err
		}
		l.Credential = worker.ExchangeCredential{Exchanger: ex}
	}
	if err := s.isolate(ctx, l); err != nil {
		return nil, err
	}
	if err := s.capLauncher(l); err != nil {
		return nil, err
	}
	return l, nil
}

// notReady is a readiness failure: /readyz shows reason, the log shows err.
type notReady struct {
	reason string
	err    error
}

func (n notReady) Error() string        { return n.reason + ": " + n.err.Error() }
func (n notReady) Unwrap() error        { return n.err }
func (n notReady) PublicReason() string { return n.reason }

func defaultDataDir() string {
	if d, err := os.UserHomeDir(); err == nil && d != "" && d != "/" {
		return filepath.Join(d, ".local", "share", "gemgate", "demo")
	}
	return filepath.Join(os.TempDir(), fmt.Sprintf("gemgate-demo-%d", os.Getuid()))
}

func osUser() string {
	if u, err := user.Current(); err == nil && u.Username != "" {
		return u.Username
	}
	for _, k := range []string{"USER", "LOGNAME"} {
		if u := os.Getenv(k); u != "" {
			return u
		}
	}
	return fmt.Sprintf("uid%d", os.Getuid())
}

// run serves until ctx ends, then stops gracefully (stop.go): a drain while the listener
// still serves, streams ended, in-flight calls given shutdown_grace to finish, every worker
// stopped.
func (s *server) run(ctx context.Context) error {
	var tlsConfig *tls.Config
	if s.cfg.TLSCert != "" {
		certs, err := newCertFiles(s.cfg.TLSCert, s.cfg.TLSKey, s.log)
		if err != nil {
			s.ln.Close()
			return fmt.Errorf("tls_cert/tls_key: %w", err)
		}
		tlsConfig = &tls.Config{GetCertificate: certs.get}
		if s.cfg.dev {
			// gemgate dev: TLS 1.2 or later, even where GODEBUG=tls10server=1 would let Go's
			// servers speak TLS 1.0 and 1.1 again.
			tlsConfig.MinVersion = tls.VersionTLS12
		}
	}
	// The cap sits beneath TLS: it counts descriptors, and the server must still see *tls.Conn.
	ln := limit.Connections(s.ln, limit.ConnectionCap{Max: s.cfg.MaxConnections, TLS: tlsConfig, Logger: s.log})
	errc := make(chan error, 2)
	serve := s.http.Serve
	if tlsConfig != nil {
		s.http.TLSConfig = tlsConfig
		serve = func(ln net.Listener) error { return s.http.ServeTLS(ln, "", "") }
	}
	go func() { errc <- serve(ln) }()
	if s.metrics != nil {
		go func() { errc <- s.metrics.Serve(s.metricsLn) }()
		s.log.Info("metrics listening", "addr", s.metricsLn.Addr().String())
	}
	s.log.Info("gemgate serving", "version", version, "mcp", s.publicURL, "listen", s.ln.Addr().String(), "auth", s.cfg.Auth)

	var serveErr error
	select {
	case <-ctx.Done():
	case serveErr = <-errc:
	}
	s.stop(serveErr != nil)
	if serveErr != nil && !errors.Is(serveErr, http.ErrServerClosed) {
		return serveErr
	}
	return nil
}

// poolSettings are how workers are shared and how long they live. The GemStone relay runs one
// call at a time (queued here, not piled on its stdin) and serves sessions only.
func (c *Config) poolSettings() pool.Settings {
	s := pool.Settings{
		WorkerPer: c.WorkerPer, IdleTimeout: c.WorkerIdleTimeout, OnWorkerExit: c.OnWorkerExit,
		OnTokenExpiry: c.OnTokenExpiry, MaxWorkers: c.MaxWorkers, MaxCallsPerWorker: c.MaxCallsPerWorker,
		Concurrency: c.WorkerConcurrency,
	}
	if c.Worker == "gemstone" {
		s.Concurrency = cmp.Or(s.Concurrency, 1)
		s.SessionsOnly = gemstoneSessionsOnly
	}
	return s
}

// audiences are those gemgate accepts tokens for: its public URL and the audiences setting.
func (c *Config) audiences(publicURL string) []string {
	return append([]string{publicURL}, c.Audiences...)
}

// verifierConfig is how serve verifies tokens for the resource publicURL; check --token
// explains a token by the same.
func (c *Config) verifierConfig(publicURL string) auth.Config {
	return auth.Config{Issuer: c.Issuer, JWKSURL: c.JWKSURL, Audiences: c.audiences(publicURL),
		UserClaim: c.UserClaim, AllowInsecureHTTP: c.AllowInsecure}
}
