package main

import (
	"cmp"
	"context"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/gemgate/gemgate/auth"
	"github.com/gemgate/gemgate/auth/devissuer"
)

// devGatewayClient is the development issuer's client for gemgate itself.
const devGatewayClient = "gemgate"

// devTokenTTL is how long the printed tokens last: a working day.
const devTokenTTL = 8 * time.Hour

// devInfo is what `gemgate dev --json` prints once ready.
type devInfo struct {
	URL      string             `json:"url"`
	Metadata string             `json:"metadata,omitempty"`
	Auth     string             `json:"auth"`
	Issuer   string             `json:"issuer,omitempty"`
	Tokens   map[string]string  `json:"tokens,omitempty"`
	Clients  []devissuer.Client `json:"clients,omitempty"`
	Metrics  string             `json:"metrics,omitempty"`
	DataDir  string             `json:"data_dir"`
	CACert   string             `json:"ca_cert,omitempty"` // dev --tls: the development CA to trust
	// Sandbox is the worker sandbox in force: bwrap, or none (workers not isolated).
	Sandbox string `json:"sandbox"`
	// As root with no sandbox: the account workers run as, and their data directory.
	WorkerUser     string `json:"worker_user,omitempty"`
	WorkersDataDir string `json:"workers_data_dir,omitempty"`
}

// devCommand runs the gateway on loopback with a development issuer and the demo worker.
// It refuses any address that is not loopback: its issuer signs tokens for anyone who asks.
func devCommand(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	c, err := load("dev", args)
	if err != nil {
		return err
	}
	var p problemList
	devOnlyRules(c, &p)
	if c.DataDir == "" {
		c.DataDir = defaultDataDir()
	}
	info := devInfo{Auth: c.Auth, DataDir: c.DataDir}
	p.addErr(devTLS(c, &info))
	log, _ := newLogger(c, stderr) // nil with a bad log setting, which validate reports
	ln, issuer, err := devListen(c, &info, log)
	p.addErr(err)
	if len(p) == 0 {
		p = c.validate()
	}
	if issuer != nil {
		defer issuer.Close()
	}
	if len(p) > 0 {
		if ln != nil {
			ln.Close()
		}
		return configErrors(p)
	}

	c.logWarnings(log)
	srv, err := build(ctx, c, ln, log)
	if err != nil {
		ln.Close()
		return err
	}
	if err := devReady(stdout, c, srv, issuer, info); err != nil {
		return err
	}
	return srv.run(ctx)
}

// devListen opens dev's listener, whose URL goes in info, and with auth=oidc starts the
// development issuer for it, its key, address and client secrets kept in the data directory:
// c's issuer, whose client for gemgate is the exchange client of worker_credential=exchange
// unless one is set. The issuer writes a line to log for each token it issues or refuses.
// What it opened before a failure is returned with the error, to be closed.
func devListen(c *Config, info *devInfo, log *slog.Logger) (net.Listener, *devissuer.Issuer, error) {
	ln, err := net.Listen("tcp", c.Listen)
	if err != nil {
		return nil, nil, listenError("listen", c.Listen, err)
	}
	info.URL = resourceURL(c, ln.Addr().String())
	if c.Auth != "oidc" {
		return ln, nil, nil
	}
	// The issuer exchanges for the backend exchange_audience names, gemstone by default.
	backend := cmp.Or(c.ExchangeAudience, devExchangeAudience)
	issuer, clients, err := startKeptIssuer(c.DataDir, "--dev-issuer-listen or GEMGATE_DEV_ISSUER_LISTEN",
		devissuer.Options{Addr: c.DevIssuerListen, Audience: info.URL, Clients: devClients(nil), Logger: log,
			ExchangeAudiences: []string{backend}})
	if err != nil {
		return ln, nil, err
	}
	c.Issuer = issuer.URL()
	if c.WorkerCredential == "exchange" && c.ExchangeClientID == "" {
		self := clients[len(clients)-1] // gemgate's own (devClients)
		c.ExchangeClientID, c.ExchangeSecret, c.ExchangeAudience = self.ID, self.Secret, backend
	}
	return ln, issuer, nil
}

// devReady prints, once the gateway is built, what dev serves and how to reach it: as text,
// or as one JSON object with --json.
func devReady(stdout io.Writer, c *Config, srv *server, issuer *devissuer.Issuer, info devInfo) error {
	if issuer != nil {
		info.Issuer = issuer.URL()
		info.Metadata = auth.MetadataURL(info.URL)
		var err error
		if info.Tokens, info.Clients, err = issuerCredentials(issuer); err != nil {
			return err
		}
	}
	info.Sandbox = srv.sandbox
	if srv.devWorkersDir != "" {
		info.WorkerUser, info.WorkersDataDir = devWorkerAccount, srv.devWorkersDir
	}
	if srv.metricsLn != nil {
		info.Metrics = "http://" + srv.metricsLn.Addr().String() + "/metrics"
	}
	if c.DevJSON {
		return json.NewEncoder(stdout).Encode(info)
	}
	printDevInfo(stdout, info)
	return nil
}

// devOnlyRules are what dev refuses that serve would take: any address off loopback, a
// public URL (dev derives it) and another issuer, its keys or its token endpoint (dev runs its
// own).
func devOnlyRules(c *Config, p *problemList) {
	for _, addr := range []string{c.Listen, c.DevIssuerListen, c.MetricsListen} {
		p.addIf(addr != "off" && !auth.IsLoopbackAddr(addr), "gemgate dev listens on loopback only; %q is not a loopback address", addr)
	}
	p.addIf(c.PublicURL != "", "public_url: gemgate dev derives it from listen")
	p.addIf(c.Auth == "oidc" && c.Issuer != "", "issuer: gemgate dev runs its own; use gemgate serve for another")
	// Its keys decide who is who as much as the issuer (whoever holds keys elsewhere would mint
	// tokens dev accepts), and its token endpoint is sent the exchange secret and callers' tokens.
	p.addIf(c.Auth == "oidc" && c.JWKSURL != "", "jwks_url: gemgate dev takes the keys of its own issuer; use gemgate serve for another")
	p.addIf(c.Auth == "oidc" && c.ExchangeTokenURL != "", "exchange_token_url: gemgate dev exchanges tokens at its own issuer; use gemgate serve for another")
}

// devTLS sets dev's TLS files with --tls: the files given, or a loopback certificate signed
// by the development CA under certs/ (made once, reused), whose path goes in info. They are
// loaded here, so that a pair that does not load is refused before dev says it is ready.
func devTLS(c *Config, info *devInfo) error {
	if !c.DevTLS {
		return nil
	}
	if c.TLSCert == "" {
		certs, err := devCertificate(devCertsDir)
		if err != nil {
			return fmt.Errorf("tls: %w", err)
		}
		c.TLSCert, c.TLSKey = certs.Cert, certs.Key
		info.CACert, _ = filepath.Abs(certs.CA)
	}
	if _, err := tls.LoadX509KeyPair(c.TLSCert, c.TLSKey); err != nil {
		return fmt.Errorf("tls: %w", err)
	}
	return nil
}

// devClients are the development issuer's clients: alice and bob, one read-write client per
// extra user, and last gemgate's own client, for exchanging a caller's token for a worker
// credential. Secrets are fresh; startKeptIssuer replaces them with kept ones.
func devClients(users []string) []devissuer.Client {
	clients := devissuer.DefaultClients()
	for _, u := range users {
		clients = append(clients, devissuer.Client{ID: u, Secret: devissuer.NewSecret(), User: u, Scopes: []string{"mcp:use", "mcp:write"}})
	}
	return append(clients, devissuer.Client{ID: devGatewayClient, Secret: devissuer.NewSecret(), User: devGatewayClient})
}

// issuerCredentials mints a token for every client's user but gemgate's own and lists the
// clients, for printing.
func issuerCredentials(issuer *devissuer.Issuer) (map[string]string, []devissuer.Client, error) {
	tokens := map[string]string{}
	var clients []devissuer.Client
	for _, cl := range issuer.Clients() {
		if cl.ID == devGatewayClient {
			continue
		}
		tok, err := issuer.Mint(cl.User, cl.Scopes, devTokenTTL)
		if err != nil {
			return nil, nil, err
		}
		tokens[cl.User] = tok
		clients = append(clients, cl)
	}
	return tokens, clients, nil
}

func printDevInfo(w io.Writer, info devInfo) {
	var b strings.Builder
	fmt.Fprintf(&b, "gemgate dev is ready (stop it with Ctrl-C).\n\n")
	fmt.Fprintf(&b, "  MCP endpoint   %s\n", info.URL)
	if info.Metrics != "" {
		fmt.Fprintf(&b, "  metrics        %s\n", info.Metrics)
	}
	if info.Sandbox == "none" {
		fmt.Fprintf(&b, "  sandbox        NONE: workers are not isolated from each other or from gemgate (fine for one person on loopback; see the log)\n")
	}
	if info.WorkerUser == "" {
		fmt.Fprintf(&b, "  data dir       %s (the demo's notes; the issuer's keys)\n", info.DataDir)
	} else {
		fmt.Fprintf(&b, "  data dir       %s (the issuer's keys)\n", info.DataDir)
		fmt.Fprintf(&b, "  workers        run as %s: gemgate runs as root and found no sandbox (see its log)\n", info.WorkerUser)
		fmt.Fprintf(&b, "                 their data (the demo's notes): %s\n", info.WorkersDataDir)
	}
	inspectorEnv := ""
	if info.CACert != "" {
		fmt.Fprintf(&b, "  TLS            certificate signed by the development CA %s\n", info.CACert)
		inspectorEnv = "NODE_EXTRA_CA_CERTS=" + info.CACert + " "
	}
	if info.Issuer == "" {
		fmt.Fprintf(&b, "  auth           none: every request acts as the local user\n\n")
		printTrust(&b, info)
		fmt.Fprintf(&b, "Claude Code:     claude mcp add --transport http gemgate %s\n", info.URL)
		fmt.Fprintf(&b, "MCP Inspector:   %snpx -y @modelcontextprotocol/inspector@2 --cli %s --transport http --method tools/list\n", inspectorEnv, info.URL)
		io.WriteString(w, b.String())
		return
	}
	fmt.Fprintf(&b, "  issuer         %s (development only; keys kept in the data dir)\n", info.Issuer)
	fmt.Fprintf(&b, "  metadata       %s\n\n", info.Metadata)
	printTrust(&b, info)
	for _, cl := range info.Clients {
		mode := "read-only"
		if slices.Contains(cl.Scopes, "mcp:write") {
			mode = "read-write"
		}
		fmt.Fprintf(&b, "%s (%s, scopes %s), valid %s, also after a restart:\n  %s\n", cl.User, mode, strings.Join(cl.Scopes, " "), devTokenTTL, info.Tokens[cl.User])
		fmt.Fprintf(&b, "  client credentials: client_id=%s client_secret=%s\n\n", cl.ID, cl.Secret)
	}
	alice := info.Tokens["alice"]
	fmt.Fprintf(&b, "Claude Code (as alice):\n  claude mcp add --transport http gemgate %s --header \"Authorization: Bearer %s\"\n\n", info.URL, alice)
	fmt.Fprintf(&b, "MCP Inspector (as alice):\n  %snpx -y @modelcontextprotocol/inspector@2 --cli %s --transport http --header \"Authorization: Bearer %s\" --method tools/list\n", inspectorEnv, info.URL, alice)
	io.WriteString(w, b.String())
}

// printTrust says how to make common clients trust the development CA, for dev --tls.
func printTrust(b *strings.Builder, info devInfo) {
	if info.CACert == "" {
		return
	}
	fmt.Fprintf(b, "Trust the development CA (once per client; it can only vouch for localhost, 127.0.0.1 and ::1):\n")
	fmt.Fprintf(b, "  curl           curl --cacert %s %s\n", info.CACert, info.URL)
	fmt.Fprintf(b, "  Node           NODE_EXTRA_CA_CERTS=%s (for npx, the Inspector, Claude Code, the TypeScript SDK)\n", info.CACert)
	fmt.Fprintf(b, "  Go             add it to tls.Config.RootCAs (x509.CertPool.AppendCertsFromPEM), or on Linux\n")
	fmt.Fprintf(b, "                 SSL_CERT_FILE=%s (replaces the system roots for that program)\n\n", info.CACert)
}
