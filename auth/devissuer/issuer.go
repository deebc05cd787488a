package devissuer

import (
	"cmp"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"slices"
	"time"
)

// Client is a registered OAuth client. Tokens it obtains with client_credentials are
// issued for User (claims sub and preferred_username) and carry at most Scopes.
type Client struct {
	ID     string   `json:"id"`
	Secret string   `json:"secret"`
	User   string   `json:"user"`
	Scopes []string `json:"scopes"`
}

// Options configures [Start]; a zero field but Audience means the documented default.
type Options struct {
	// Addr is the listen address, default "127.0.0.1:0". Only loopback addresses are
	// accepted; a host name must resolve to loopback addresses only ("localhost" does).
	Addr string
	// Audience is the `aud` of minted access tokens: the gateway's public MCP URL.
	// Required. An RFC 8707 `resource` parameter is accepted only if it equals it.
	Audience string
	// Clients are the registered clients, default [DefaultClients].
	Clients []Client
	// ExchangeAudiences are the audiences the token-exchange grant may issue tokens for
	// (e.g. "gemstone"); none refuses every exchange.
	ExchangeAudiences []string
	// Logger receives one line per issued or refused token; nil discards.
	Logger *slog.Logger
	// KeyFile, when set, keeps the signing key across starts (PEM, mode 0600), so tokens
	// outlive a restart.
	KeyFile string
}

const (
	defaultAddr = "127.0.0.1:0"
	tokenTTL    = time.Hour // the lifetime of issued access tokens
)

// DefaultClients returns the development clients, with secrets random on every call: "alice"
// (scopes mcp:use mcp:write: read-write) and "bob" (scope mcp:use: read-only).
func DefaultClients() []Client {
	return []Client{
		{ID: "alice", Secret: NewSecret(), User: "alice", Scopes: []string{"mcp:use", "mcp:write"}},
		{ID: "bob", Secret: NewSecret(), User: "bob", Scopes: []string{"mcp:use"}},
	}
}

// Issuer is a running development authorization server. It is safe for concurrent use.
type Issuer struct {
	url      string
	opts     Options
	clients  map[string]Client
	key      *signingKey
	srv      *http.Server
	listener net.Listener
	log      *slog.Logger
}

// Start validates o, listens on its loopback address and serves until [Issuer.Close].
func Start(o Options) (*Issuer, error) {
	o, err := o.withDefaults()
	if err != nil {
		return nil, err
	}
	clients := make(map[string]Client, len(o.Clients))
	for _, c := range o.Clients {
		clients[c.ID] = c
	}
	key, err := loadSigningKey(o.KeyFile)
	if err != nil {
		return nil, fmt.Errorf("devissuer: %w", err)
	}
	addr, err := loopbackAddr(o.Addr)
	if err != nil {
		return nil, fmt.Errorf("devissuer: %w", err)
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("devissuer: listen: %w", err)
	}
	log := o.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	i := &Issuer{
		url:      "http://" + ln.Addr().String(),
		opts:     o,
		clients:  clients,
		key:      key,
		listener: ln,
		log:      log,
	}
	i.srv = &http.Server{
		Handler:           i.routes(),
		ReadHeaderTimeout: 10 * time.Second,
		ErrorLog:          slog.NewLogLogger(log.Handler(), slog.LevelDebug),
	}
	go func() {
		if err := i.srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Error("devissuer: serve", "err", err)
		}
	}()
	return i, nil
}

// withDefaults returns a copy of o, its slices copied too, with defaults filled in and every
// problem reported at once.
func (o Options) withDefaults() (Options, error) {
	var errs []error
	o.Addr = cmp.Or(o.Addr, defaultAddr)
	if o.Audience == "" {
		errs = append(errs, errors.New("audience is required (the gateway's public MCP URL)"))
	}
	if o.Clients == nil {
		o.Clients = DefaultClients()
	}
	seen := make(map[string]bool)
	clients := make([]Client, 0, len(o.Clients))
	for n, c := range o.Clients {
		switch {
		case c.ID == "":
			errs = append(errs, fmt.Errorf("client #%d has no ID", n))
		case c.Secret == "":
			errs = append(errs, fmt.Errorf("client %q has no Secret", c.ID))
		case c.User == "":
			errs = append(errs, fmt.Errorf("client %q has no User", c.ID))
		case seen[c.ID]:
			errs = append(errs, fmt.Errorf("client %q is listed twice", c.ID))
		}
		seen[c.ID] = true
		c.Scopes = slices.Clone(c.Scopes)
		clients = append(clients, c)
	}
	o.Clients = clients
	o.ExchangeAudiences = slices.Clone(o.ExchangeAudiences)
	if err := errors.Join(errs...); err != nil {
		return o, fmt.Errorf("devissuer: invalid options:\n%w", err)
	}
	return o, nil
}

// URL returns the issuer identifier, e.g. "http://127.0.0.1:41234": the `iss` of every token
// and the base of every endpoint.
func (i *Issuer) URL() string { return i.url }

// Clients returns a copy of the registered clients, secrets included.
func (i *Issuer) Clients() []Client {
	out := slices.Clone(i.opts.Clients)
	for n := range out {
		out[n].Scopes = slices.Clone(out[n].Scopes)
	}
	return out
}

// Mint issues an access token for user with the given scopes, as the token endpoint would,
// without a client. ttl 0 means an hour; a negative ttl mints an expired token.
func (i *Issuer) Mint(user string, scopes []string, ttl time.Duration) (string, error) {
	if user == "" {
		return "", errors.New("devissuer: Mint: empty user")
	}
	return i.sign(i.userClaims(user, scopes), cmp.Or(ttl, tokenTTL))
}

// Close stops the server and closes its listener.
func (i *Issuer) Close() error {
	err := i.srv.Close()
	// srv.Close closes only the listeners Serve has taken, maybe not this one yet.
	if lerr := i.listener.Close(); lerr != nil && !errors.Is(lerr, net.ErrClosed) && err == nil {
		err = lerr
	}
	return err
}

// NewSecret is a new client secret: 16 random bytes in hexadecimal.
func NewSecret() string { return randomHex(16) }

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b) // never fails: crypto/rand crashes the program instead
	return hex.EncodeToString(b)
}
