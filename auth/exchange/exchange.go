package exchange

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"golang.org/x/oauth2"
	"golang.org/x/oauth2/clientcredentials"
)

// RFC 8693 identifiers.
const (
	grantTypeTokenExchange = "urn:ietf:params:oauth:grant-type:token-exchange"
	tokenTypeAccessToken   = "urn:ietf:params:oauth:token-type:access_token"
)

// Config describes the gateway's client at the issuer and what to ask for.
type Config struct {
	TokenURL     string       // the issuer's token endpoint; required, absolute http(s) URL
	ClientID     string       // the gateway's client id; required
	ClientSecret string       // the gateway's client secret; required, sent by client_secret_basic
	Audience     string       // the backend the credential is for (RFC 8693 audience); required
	Scopes       []string     // optional scope parameter
	HTTPClient   *http.Client // nil means http.DefaultClient
}

// Credential is an issued token for a worker. It prints (fmt, slog) without the token.
type Credential struct {
	Token  string
	Expiry time.Time // zero when the issuer did not say (no expires_in)
}

func (c Credential) String() string {
	if c.Expiry.IsZero() {
		return "exchange.Credential{Token:[redacted]}"
	}
	return "exchange.Credential{Token:[redacted], Expiry:" + c.Expiry.Format(time.RFC3339) + "}"
}

// GoString keeps %#v from printing the token.
func (c Credential) GoString() string { return c.String() }

// LogValue keeps slog from printing the token.
func (c Credential) LogValue() slog.Value {
	return slog.GroupValue(slog.Time("expiry", c.Expiry))
}

// Error is a refusal from the token endpoint (RFC 6749 §5.2). Code "invalid_grant"
// usually means the subject token expired or was revoked.
type Error struct {
	StatusCode  int
	Code        string // e.g. "invalid_grant", "invalid_client", "invalid_target"
	Description string // from the issuer, with the subject token removed if it was echoed
}

func (e *Error) Error() string {
	s := fmt.Sprintf("token exchange refused: HTTP %d", e.StatusCode)
	if e.Code != "" {
		s += " " + e.Code
	}
	if e.Description != "" {
		s += ": " + e.Description
	}
	return s
}

// Exchanger performs token exchanges with one configuration. It is safe for
// concurrent use.
type Exchanger struct {
	cfg Config
}

// New validates cfg, reporting every problem at once, and returns an Exchanger using
// a copy of it.
func New(cfg Config) (*Exchanger, error) {
	var errs []error
	if cfg.TokenURL == "" {
		errs = append(errs, errors.New("TokenURL is required"))
	} else if u, err := url.Parse(cfg.TokenURL); err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
		errs = append(errs, fmt.Errorf("TokenURL %q is not an absolute http(s) URL", cfg.TokenURL))
	} else if u.User != nil || u.Fragment != "" {
		errs = append(errs, errors.New("TokenURL must not carry user info or a fragment"))
	}
	if cfg.ClientID == "" {
		errs = append(errs, errors.New("ClientID is required"))
	}
	if cfg.ClientSecret == "" {
		errs = append(errs, errors.New("ClientSecret is required"))
	}
	if cfg.Audience == "" {
		errs = append(errs, errors.New("audience is required"))
	}
	for _, s := range cfg.Scopes {
		if s == "" || strings.ContainsAny(s, " \t\r\n\"\\") {
			errs = append(errs, fmt.Errorf("scope %q is not a valid scope token", s))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return nil, fmt.Errorf("exchange: invalid config:\n%w", err)
	}
	cfg.Scopes = slices.Clone(cfg.Scopes)
	return &Exchanger{cfg: cfg}, nil
}

// Exchange trades subjectToken (the user's access token, already verified by the
// gateway) for a token aimed at the configured audience.
//
// It uses golang.org/x/oauth2/clientcredentials rather than hand-written HTTP: its
// EndpointParams may override grant_type (the package lets exactly that key be
// replaced), and it brings RFC 6749 client_secret_basic encoding, token-response and
// error-response parsing, expires_in handling, and the context-carried HTTP client.
// oauth2.Config has no grant for this, and the MCP Go SDK's oauthex.ExchangeToken is
// shaped for ID-JAG (SEP-990), not for access-token to access-token exchange.
func (e *Exchanger) Exchange(ctx context.Context, subjectToken string) (Credential, error) {
	if subjectToken == "" {
		return Credential{}, errors.New("exchange: empty subject token")
	}
	cc := clientcredentials.Config{
		ClientID:     e.cfg.ClientID,
		ClientSecret: e.cfg.ClientSecret,
		TokenURL:     e.cfg.TokenURL,
		Scopes:       e.cfg.Scopes,
		AuthStyle:    oauth2.AuthStyleInHeader, // never probe: the secret goes one way only
		EndpointParams: url.Values{
			"grant_type":           {grantTypeTokenExchange},
			"subject_token":        {subjectToken},
			"subject_token_type":   {tokenTypeAccessToken},
			"requested_token_type": {tokenTypeAccessToken},
			"audience":             {e.cfg.Audience},
		},
	}
	if e.cfg.HTTPClient != nil {
		ctx = context.WithValue(ctx, oauth2.HTTPClient, e.cfg.HTTPClient)
	}
	tok, err := cc.Token(ctx)
	if err != nil {
		return Credential{}, cleanError(err, subjectToken)
	}
	if t, ok := tok.Extra("issued_token_type").(string); ok && t != "" && t != tokenTypeAccessToken {
		return Credential{}, fmt.Errorf("exchange: issuer returned issued_token_type %q, want %s", t, tokenTypeAccessToken)
	}
	if !strings.EqualFold(tok.Type(), "Bearer") {
		return Credential{}, fmt.Errorf("exchange: issuer returned token_type %q, want Bearer", tok.Type())
	}
	return Credential{Token: tok.AccessToken, Expiry: tok.Expiry}, nil
}

// cleanError turns an oauth2 error into one that cannot carry a token: a refusal keeps
// only status, code and description (oauth2.RetrieveError's message may quote the
// response body); anything else is redacted of the subject token and passed on.
func cleanError(err error, subjectToken string) error {
	var re *oauth2.RetrieveError
	if errors.As(err, &re) {
		out := &Error{Code: re.ErrorCode, Description: redact(re.ErrorDescription, subjectToken)}
		if re.Response != nil {
			out.StatusCode = re.Response.StatusCode
		}
		return out
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("exchange: %w", ctxErr(err))
	}
	return fmt.Errorf("exchange: %s", redact(err.Error(), subjectToken))
}

// ctxErr keeps the context sentinel for errors.Is without the wrapped message.
func ctxErr(err error) error {
	if errors.Is(err, context.DeadlineExceeded) {
		return context.DeadlineExceeded
	}
	return context.Canceled
}

func redact(s, secret string) string {
	if secret == "" {
		return s
	}
	return strings.ReplaceAll(s, secret, "[redacted]")
}
