package exchange

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/gemgate/gemgate/auth"
	"github.com/gemgate/gemgate/internal/clip"

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
	TokenURL     string // the issuer's token endpoint; required, absolute http(s) URL
	ClientID     string // the gateway's client id; required
	ClientSecret string // the gateway's client secret; required, sent by client_secret_basic
	Audience     string // the backend the credential is for (RFC 8693 audience); required
	// GatewayAudiences are the audiences gemgate accepts tokens for: an issued JWT naming one
	// would be a token for gemgate in a worker's hands, and is refused.
	GatewayAudiences []string
	HTTPClient       *http.Client // nil means http.DefaultClient; its redirects are never followed
}

// timeout bounds an exchange, so that a token endpoint that never answers cannot hold the
// opening request and the user's worker slot. Discovery is bounded alike.
const timeout = 10 * time.Second

// maxErrorText bounds what of the issuer's words an error quotes (a description, a token
// type): enough for any real message, never a log line of the issuer's choosing.
const maxErrorText = 200

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
	required := []struct{ name, value string }{
		{"ClientID", cfg.ClientID}, {"ClientSecret", cfg.ClientSecret}, {"audience", cfg.Audience}}
	for _, f := range required {
		if f.value == "" {
			errs = append(errs, errors.New(f.name+" is required"))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return nil, fmt.Errorf("exchange: invalid config:\n%w", err)
	}
	// The request carries the client secret (its Authorization header) and the user's own
	// token (its body). A redirect of it, as a 307 or 308 would have Go's client send it, is
	// never followed: the secret and the token go to the configured endpoint or nowhere.
	c := *http.DefaultClient
	if cfg.HTTPClient != nil {
		c = *cfg.HTTPClient
	}
	c.CheckRedirect = func(req *http.Request, _ []*http.Request) error {
		return fmt.Errorf("the token endpoint redirected to %s, which gemgate does not follow with the client secret and the user's token; set the token endpoint itself", req.URL.Redacted())
	}
	cfg.HTTPClient = &c
	return &Exchanger{cfg: cfg}, nil
}

// Exchange trades subjectToken (the user's verified access token) for a token aimed at the
// configured audience. golang.org/x/oauth2/clientcredentials, whose EndpointParams may
// replace grant_type, does the client authentication and response parsing; the MCP Go SDK's
// oauthex.ExchangeToken is shaped for ID-JAG (SEP-990), not for this exchange.
func (e *Exchanger) Exchange(ctx context.Context, subjectToken string) (Credential, error) {
	if subjectToken == "" {
		return Credential{}, errors.New("exchange: empty subject token")
	}
	cc := clientcredentials.Config{
		ClientID:     e.cfg.ClientID,
		ClientSecret: e.cfg.ClientSecret,
		TokenURL:     e.cfg.TokenURL,
		AuthStyle:    oauth2.AuthStyleInHeader, // never probe: the secret goes one way only
		EndpointParams: url.Values{
			"grant_type":           {grantTypeTokenExchange},
			"subject_token":        {subjectToken},
			"subject_token_type":   {tokenTypeAccessToken},
			"requested_token_type": {tokenTypeAccessToken},
			"audience":             {e.cfg.Audience},
		},
	}
	ctx = context.WithValue(ctx, oauth2.HTTPClient, e.cfg.HTTPClient)
	bounded, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	tok, err := cc.Token(bounded)
	if err != nil {
		if ctx.Err() == nil && bounded.Err() != nil {
			// Not a context error to the caller: its own context is live, and a caller that
			// reads context.DeadlineExceeded as its client gone would answer no one.
			return Credential{}, fmt.Errorf("exchange: the token endpoint gave no answer within %s", timeout)
		}
		return Credential{}, e.cleanError(err, subjectToken)
	}
	// issued_token_type and token_type are the issuer's own words (oauth2's Type() would call
	// a missing token_type Bearer), and a credential must not be expired when it is issued.
	if v := tok.Extra("issued_token_type"); v != nil {
		if t, ok := v.(string); !ok || (t != "" && t != tokenTypeAccessToken) {
			return Credential{}, fmt.Errorf("exchange: issuer returned issued_token_type %s, want %s", e.quote(fmt.Sprint(v), subjectToken), tokenTypeAccessToken)
		}
	}
	if !strings.EqualFold(tok.TokenType, "Bearer") {
		return Credential{}, fmt.Errorf("exchange: issuer returned token_type %s, want Bearer", e.quote(tok.TokenType, subjectToken))
	}
	if !tok.Expiry.IsZero() && !tok.Expiry.After(time.Now()) {
		return Credential{}, errors.New("exchange: issuer returned a token already expired (a negative expires_in)")
	}
	// An issuer that ignored the audience may give back the caller's own token or one for
	// gemgate's audience, which the worker must never hold. So the token must be a bearer
	// token as written (no space a reader would trim), not the caller's, and, when it is a
	// JWT, for the backend's audience.
	// Both checks read it in the base64url alphabet without padding, as gemgate reads a JWT:
	// in the standard one ('+', '/'; bearer syntax allows them) it is the same token to a JWT
	// library that reads either, and to a worker that maps it back.
	urlSpelled := strings.NewReplacer("+", "-", "/", "_").Replace(strings.TrimRight(tok.AccessToken, "="))
	switch {
	case !auth.IsBearerToken(tok.AccessToken):
		return Credential{}, errors.New("exchange: the issuer returned an access_token that is not in bearer token syntax")
	case urlSpelled == subjectToken:
		return Credential{}, errors.New("exchange: the issuer returned the caller's own token, not one for the backend audience")
	}
	aud, isJWT, err := auth.UnverifiedAudience(urlSpelled)
	switch {
	case !isJWT:
	case err != nil:
		return Credential{}, fmt.Errorf("exchange: the issuer returned a JWT whose claims do not read: %s", e.quote(err.Error(), subjectToken))
	case !slices.Contains(aud, e.cfg.Audience):
		return Credential{}, fmt.Errorf("exchange: the issuer returned a token for audience %s, not %s", e.quote(strings.Join(aud, " "), subjectToken), e.cfg.Audience)
	case slices.ContainsFunc(aud, func(a string) bool { return slices.Contains(e.cfg.GatewayAudiences, a) }):
		return Credential{}, fmt.Errorf("exchange: the issuer returned a token for gemgate's own audience too (%s); it would be a token for gemgate in the worker's hands", e.quote(strings.Join(aud, " "), subjectToken))
	}
	return Credential{Token: tok.AccessToken, Expiry: tok.Expiry}, nil
}

// cleanError turns an oauth2 error into one that cannot carry a secret, since the error is
// logged: a refusal keeps only status, code and description, clipped and cleared of the
// subject token and client secret in every form the request carried them.
func (e *Exchanger) cleanError(err error, subjectToken string) error {
	var re *oauth2.RetrieveError
	if errors.As(err, &re) {
		out := &Error{Code: e.clean(re.ErrorCode, subjectToken), Description: e.clean(re.ErrorDescription, subjectToken)}
		if re.Response != nil {
			out.StatusCode = re.Response.StatusCode
		}
		return out
	}
	// A context error keeps its sentinel for errors.Is, without the wrapped message.
	for _, sentinel := range []error{context.DeadlineExceeded, context.Canceled} {
		if errors.Is(err, sentinel) {
			return fmt.Errorf("exchange: %w", sentinel)
		}
	}
	return fmt.Errorf("exchange: %s", e.clean(err.Error(), subjectToken))
}

// clean is s without the subject token or the client secret, clipped to maxErrorText.
func (e *Exchanger) clean(s, subjectToken string) string {
	secret := e.cfg.ClientSecret
	basic := base64.StdEncoding.EncodeToString([]byte(url.QueryEscape(e.cfg.ClientID) + ":" + url.QueryEscape(secret)))
	for _, v := range []string{subjectToken, url.QueryEscape(subjectToken), secret, url.QueryEscape(secret), basic} {
		if v != "" {
			s = strings.ReplaceAll(s, v, "[redacted]")
		}
	}
	return clip.String(s, maxErrorText)
}

// quote is s cleaned and quoted, for a value of the issuer's named in an error.
func (e *Exchanger) quote(s, subjectToken string) string {
	return strconv.Quote(e.clean(s, subjectToken))
}
