package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"strings"

	"github.com/gemgate/gemgate/auth"
	"github.com/gemgate/gemgate/auth/devissuer"
)

// issuerInfo is what `gemgate issuer --json` prints once ready.
type issuerInfo struct {
	Issuer   string             `json:"issuer"`
	Audience string             `json:"audience"`
	Tokens   map[string]string  `json:"tokens"`
	Clients  []devissuer.Client `json:"clients"`
	// ExchangeClient is gemgate's own client, for replicas run with worker_credential=exchange.
	ExchangeClient devissuer.Client `json:"exchange_client"`
	DataDir        string           `json:"data_dir"`
}

// issuerDefaultAudience is the public URL of a gemgate serve left at its defaults: so that
// `gemgate issuer` and `gemgate serve --issuer URL` work together with no other setting.
const issuerDefaultAudience = "http://127.0.0.1:8080/mcp"

const issuerUsage = `usage: gemgate issuer [flags]

Runs gemgate dev's development issuer on its own, on loopback only, so that several gemgate
serve replicas (behind a load balancer) and tests can share one. Its tokens carry one audience:
the public URL every replica is given with --public-url, which behind a balancer is the
balancer's URL. Key, address and client secrets are kept in <data-dir>/.dev-issuer, so what it
prints keeps working after a restart. Development only: it signs tokens for anyone who asks.

flags:
`

// issuerCommand runs the development issuer until ctx ends.
func issuerCommand(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("issuer", flag.ContinueOnError)
	fs.SetOutput(io.Discard) // a flag that does not parse is reported once, below; -h prints the usage
	listen := fs.String("listen", defaults().DevIssuerListen, "loopback address to listen on; 127.0.0.1:0 means the port of the last start, else a free one")
	audience := fs.String("audience", issuerDefaultAudience, "the aud of every token: the replicas' shared public_url (the balancer's MCP URL)")
	users := fs.String("users", "", "extra read-write users (comma-separated), each with a client and a ready token, besides alice and bob")
	dataDir := fs.String("data-dir", "", "where the key, address and client secrets are kept (default: gemgate dev's data directory)")
	asJSON := fs.Bool("json", false, "print one JSON object with the issuer URL, tokens and clients once ready")
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), issuerUsage)
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); errors.Is(err, flag.ErrHelp) {
		fs.SetOutput(stderr)
		fs.Usage()
		return err
	} else if err != nil {
		return fmt.Errorf("%w (gemgate issuer -h lists every setting)", err)
	}
	extra, errs := issuerChecks(fs.Args(), *listen, *audience, *users)
	if len(errs) > 0 {
		return configErrors(errs)
	}
	if *dataDir == "" {
		*dataDir = defaultDataDir()
	}
	// A line on stderr for each token issued or refused, as gemgate dev logs them.
	log := slog.New(slog.NewTextHandler(stderr, nil))
	issuer, clients, err := startKeptIssuer(*dataDir, "--listen",
		devissuer.Options{Addr: *listen, Audience: *audience, Clients: devClients(extra), Logger: log})
	if err != nil {
		return err
	}
	defer issuer.Close()
	info := issuerInfo{
		Issuer: issuer.URL(), Audience: *audience, DataDir: *dataDir,
		ExchangeClient: clients[len(clients)-1], // gemgate's own (devClients)
	}
	if info.Tokens, info.Clients, err = issuerCredentials(issuer); err != nil {
		return err
	}
	if *asJSON {
		if err := json.NewEncoder(stdout).Encode(info); err != nil {
			return err
		}
	} else {
		printIssuerInfo(stdout, info)
	}
	<-ctx.Done()
	return nil
}

// issuerChecks lists every problem of the flags at once and returns the extra users.
func issuerChecks(rest []string, listen, audience, users string) ([]string, []error) {
	var p problemList
	p.addIf(len(rest) > 0, "unexpected arguments %q", rest)
	// The issuer signs tokens for anyone who asks: it must never be reachable from elsewhere.
	p.addIf(!auth.IsLoopbackAddr(listen), "listen: gemgate issuer listens on loopback only; %q is not a loopback address", listen)
	p.addIf(absoluteHTTPURL(audience) == nil,
		"audience: %q must be an absolute http(s) URL without query or fragment, like %s", audience, issuerDefaultAudience)
	var extra []string
	seen := map[string]bool{"alice": true, "bob": true, devGatewayClient: true}
	for _, u := range strings.Split(users, ",") {
		u = strings.TrimSpace(u)
		switch {
		case u == "":
		case seen[u]:
			p.add("users: %q is listed twice or is a built-in client (alice, bob, %s)", u, devGatewayClient)
		case strings.ContainsFunc(u, func(r rune) bool { return r <= ' ' || r == ':' || r == '%' || r > '~' }):
			p.add("users: %q may hold printable ASCII only, without ':' or '%%' (it is also the client id)", u)
		default:
			seen[u] = true
			extra = append(extra, u)
		}
	}
	return extra, p
}

func printIssuerInfo(w io.Writer, info issuerInfo) {
	var b strings.Builder
	fmt.Fprintf(&b, "gemgate issuer is ready (stop it with Ctrl-C). Development only.\n\n")
	fmt.Fprintf(&b, "  issuer         %s\n", info.Issuer)
	fmt.Fprintf(&b, "  audience       %s (every token's aud)\n", info.Audience)
	fmt.Fprintf(&b, "  data dir       %s (key, address and client secrets)\n\n", info.DataDir)
	fmt.Fprintf(&b, "Each replica:\n  gemgate serve --issuer %s --public-url %s --listen 127.0.0.1:<port>\n\n", info.Issuer, info.Audience)
	for _, cl := range info.Clients {
		fmt.Fprintf(&b, "%s (scopes %s), valid %s:\n  %s\n", cl.User, strings.Join(cl.Scopes, " "), devTokenTTL, info.Tokens[cl.User])
		fmt.Fprintf(&b, "  client credentials: client_id=%s client_secret=%s\n\n", cl.ID, cl.Secret)
	}
	fmt.Fprintf(&b, "Token exchange (worker_credential=exchange): exchange_client_id=%s exchange_client_secret=%s\n", info.ExchangeClient.ID, info.ExchangeClient.Secret)
	io.WriteString(w, b.String())
}
