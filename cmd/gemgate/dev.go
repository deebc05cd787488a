package main

import (
	"context"
	"crypto/rand"
	"crypto/tls"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"time"

	"github.com/gemgate/gemgate/auth"
	"github.com/gemgate/gemgate/auth/devissuer"
	"github.com/gemgate/gemgate/gateway"
)

// devGatewayClient is the development issuer's client for gemgate itself.
const devGatewayClient = "gemgate"

func randomSecret() string {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic(err)
	}
	return hex.EncodeToString(b[:])
}

// devTokenTTL is how long the printed tokens last: a working day.
const devTokenTTL = 8 * time.Hour

// devInfo is what `gemgate dev --json` prints once ready.
type devInfo struct {
	URL      string            `json:"url"`
	Metadata string            `json:"metadata,omitempty"`
	Auth     string            `json:"auth"`
	Issuer   string            `json:"issuer,omitempty"`
	Tokens   map[string]string `json:"tokens,omitempty"`
	Clients  []devClient       `json:"clients,omitempty"`
	Metrics  string            `json:"metrics,omitempty"`
	DataDir  string            `json:"data_dir"`
}

type devClient struct {
	ID     string   `json:"id"`
	Secret string   `json:"secret"`
	User   string   `json:"user"`
	Scopes []string `json:"scopes"`
}

// devCommand runs the gateway on loopback with a development issuer and the demo worker.
// It refuses any address that is not loopback: its issuer signs tokens for anyone who asks.
func devCommand(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	c, err := load("dev", args, true)
	if err != nil {
		return err
	}
	var errs []error
	for _, addr := range []string{c.Listen, c.DevIssuerListen} {
		if !gateway.IsLoopbackAddr(addr) {
			errs = append(errs, fmt.Errorf("gemgate dev listens on loopback only; %q is not a loopback address", addr))
		}
	}
	if c.PublicURL != "" {
		errs = append(errs, errors.New("public_url: gemgate dev derives it from listen"))
	}
	if c.Auth == "oidc" && c.Issuer != "" {
		errs = append(errs, errors.New("issuer: gemgate dev runs its own; use gemgate serve for another"))
	}
	var tlsConfig *tls.Config
	if c.DevTLS {
		if c.TLSCert == "" {
			c.TLSCert, c.TLSKey, err = devCertificate("certs")
			if err != nil {
				errs = append(errs, err)
			}
		}
		if c.TLSCert != "" {
			cert, err := tls.LoadX509KeyPair(c.TLSCert, c.TLSKey)
			if err != nil {
				errs = append(errs, fmt.Errorf("tls: %w", err))
			}
			tlsConfig = &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
		}
	}
	ln, err := net.Listen("tcp", c.Listen)
	if err != nil {
		errs = append(errs, listenError("listen", c.Listen, err))
	}
	var issuer *devissuer.Issuer
	info := devInfo{Auth: c.Auth, DataDir: c.DataDir}
	if ln != nil {
		info.URL = publicURLFor(c, ln)
		if c.Auth == "oidc" {
			// The gateway's own client, for exchanging a caller's token for a worker credential.
			self := devissuer.Client{ID: devGatewayClient, Secret: randomSecret(), User: devGatewayClient}
			issuer, err = devissuer.Start(devissuer.Options{
				Addr: c.DevIssuerListen, Audience: info.URL, ExchangeAudiences: []string{"gemstone"},
				Clients: append(devissuer.DefaultClients(), self),
			})
			if err != nil {
				errs = append(errs, fmt.Errorf("development issuer: %w", err))
			} else {
				c.Issuer = issuer.URL()
				if c.WorkerCredential == "exchange" && c.ExchangeClientID == "" {
					c.ExchangeClientID, c.ExchangeSecret = self.ID, self.Secret
					if c.ExchangeAudience == "" {
						c.ExchangeAudience = "gemstone"
					}
				}
			}
		}
	}
	if len(errs) == 0 {
		errs = c.validate()
	}
	if len(errs) > 0 {
		if ln != nil {
			ln.Close()
		}
		if issuer != nil {
			issuer.Close()
		}
		return configErrors(errs)
	}
	if issuer != nil {
		defer issuer.Close()
	}
	if info.DataDir == "" {
		info.DataDir = defaultDataDir()
		c.DataDir = info.DataDir
	}

	log, _ := newLogger(c, stderr)
	c.logWarnings(log)
	srv, err := build(ctx, c, ln, log, nil)
	if err != nil {
		ln.Close()
		return err
	}
	if issuer != nil {
		info.Issuer = issuer.URL()
		info.Metadata = auth.MetadataURL(info.URL)
		info.Tokens = map[string]string{}
		for _, cl := range issuer.Clients() {
			if cl.ID == devGatewayClient {
				continue
			}
			tok, err := issuer.Mint(cl.User, cl.Scopes, devTokenTTL)
			if err != nil {
				return err
			}
			info.Tokens[cl.User] = tok
			info.Clients = append(info.Clients, devClient{ID: cl.ID, Secret: cl.Secret, User: cl.User, Scopes: cl.Scopes})
		}
	}
	if srv.metricsLn != nil {
		info.Metrics = "http://" + srv.metricsLn.Addr().String() + "/metrics"
	}
	if c.DevJSON {
		if err := json.NewEncoder(stdout).Encode(info); err != nil {
			return err
		}
	} else {
		printDevInfo(stdout, info)
	}
	return srv.run(ctx, tlsConfig)
}

func printDevInfo(w io.Writer, info devInfo) {
	var b strings.Builder
	fmt.Fprintf(&b, "gemgate dev is ready (stop it with Ctrl-C).\n\n")
	fmt.Fprintf(&b, "  MCP endpoint   %s\n", info.URL)
	fmt.Fprintf(&b, "  notes stored   %s\n", info.DataDir)
	if info.Issuer == "" {
		fmt.Fprintf(&b, "  auth           none: every request acts as the local user\n\n")
		fmt.Fprintf(&b, "Claude Code:     claude mcp add --transport http gemgate %s\n", info.URL)
		fmt.Fprintf(&b, "MCP Inspector:   npx @modelcontextprotocol/inspector --cli %s --transport http --method tools/list\n", info.URL)
		io.WriteString(w, b.String())
		return
	}
	fmt.Fprintf(&b, "  issuer         %s (development only; fresh keys each start)\n", info.Issuer)
	fmt.Fprintf(&b, "  metadata       %s\n\n", info.Metadata)
	for _, cl := range info.Clients {
		mode := "read-only"
		for _, s := range cl.Scopes {
			if s == "mcp:write" {
				mode = "read-write"
			}
		}
		fmt.Fprintf(&b, "%s (%s, scopes %s), valid %s:\n  %s\n", cl.User, mode, strings.Join(cl.Scopes, " "), devTokenTTL, info.Tokens[cl.User])
		fmt.Fprintf(&b, "  client credentials: client_id=%s client_secret=%s\n\n", cl.ID, cl.Secret)
	}
	alice := info.Tokens["alice"]
	fmt.Fprintf(&b, "Claude Code (as alice):\n  claude mcp add --transport http gemgate %s --header \"Authorization: Bearer %s\"\n\n", info.URL, alice)
	fmt.Fprintf(&b, "MCP Inspector (as alice):\n  npx @modelcontextprotocol/inspector --cli %s --transport http --header \"Authorization: Bearer %s\" --method tools/list\n", info.URL, alice)
	io.WriteString(w, b.String())
}
