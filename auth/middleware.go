package auth

import (
	"cmp"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"slices"
)

// AuthenticatorOptions configures an [Authenticator]; zero values are defaults.
type AuthenticatorOptions struct {
	Verifier            TokenVerifier
	ResourceMetadataURL string
	RequiredScopes      []string
	// ChallengeScopes are what a 401 challenge asks for (default RequiredScopes): naming the
	// write scope lets an entitled user come back read-write at once.
	ChallengeScopes []string
	OnFailure       func(r *http.Request, reason string) // metrics hook; reason from FailureReason
	// RequestLogAttrs adds the request's attributes (client address, id) to a refusal's log.
	RequestLogAttrs func(r *http.Request) []slog.Attr
	Logger          *slog.Logger // nil = discard
	// UserClaim names the user's claim in refusals (default DefaultUserClaim).
	UserClaim string
	// UserName, if set, is the worker launcher's check of a token's user name: a user no
	// worker can act as is refused here, 403, not by a 503 retried for ever.
	UserName func(string) error
	// Users, if set, refuses (403) a user name that another subject presented first. Set it
	// whenever UserClaim is not sub.
	Users *UserBindings
}

// Authenticator turns token verification into RFC 6750 answers.
type Authenticator struct{ o AuthenticatorOptions }

// NewAuthenticator copies o. A nil Verifier refuses every token.
func NewAuthenticator(o AuthenticatorOptions) *Authenticator {
	o.RequiredScopes = slices.Clone(o.RequiredScopes)
	o.ChallengeScopes = slices.Clone(o.ChallengeScopes)
	if len(o.ChallengeScopes) == 0 {
		o.ChallengeScopes = o.RequiredScopes
	}
	o.UserClaim = cmp.Or(o.UserClaim, DefaultUserClaim)
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	return &Authenticator{o}
}

// retryAfterSeconds is the Retry-After of a 503 while the issuer's keys are not loaded.
const retryAfterSeconds = "5"

// Middleware authenticates every request:
//   - no token (or another scheme): 401, challenge without an error code;
//   - a token presented badly (query string, two headers, empty): 401 (not RFC 6750's 400:
//     MCP clients restart authorization only on 401) error="invalid_request";
//   - a token that fails verification: 401 error="invalid_token";
//   - a valid token whose user name no worker can act as (UserName), or that
//     another subject holds (Users): 403 error="invalid_token", no Retry-After;
//   - a valid token missing RequiredScopes: 403 error="insufficient_scope"
//     with scope = granted ∪ required;
//   - a valid token with a new user name when Users is full: 503, no Retry-After;
//   - a well-formed token while the issuer's signing keys are not loaded yet
//     (issuer down since start): 503 with Retry-After, no challenge.
//
// On success the [Principal] is in the request context.
func (a *Authenticator) Middleware(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r = a.admit(w, r); r != nil {
			next.ServeHTTP(w, r)
		}
	})
}

// admit returns the request to pass on, with the principal in its context, or nil once the
// refusal is written. Out of line, so that its frame is gone while an idle stream waits
// below (docs/PERFORMANCE.md).
//
//go:noinline
func (a *Authenticator) admit(w http.ResponseWriter, r *http.Request) *http.Request {
	p, raw, err := a.authenticate(r)
	if err != nil {
		a.refuse(w, r, p, err)
		return nil
	}
	return r.WithContext(withVerified(r.Context(), p, raw))
}

// authenticate is the decision; Middleware only renders it. raw is the verified token.
func (a *Authenticator) authenticate(r *http.Request) (p Principal, raw string, err error) {
	raw, err = BearerToken(r)
	if err != nil {
		return Principal{}, "", err
	}
	if a.o.Verifier == nil {
		return Principal{}, "", unknownKeyError("", errors.New("no verifier configured"))
	}
	p, err = a.o.Verifier.Verify(r.Context(), raw)
	if err != nil {
		return Principal{}, "", err
	}
	if a.o.UserName != nil {
		// Before the scopes: a step-up would not help this token's user.
		if err := a.o.UserName(p.User); err != nil {
			return Principal{}, "", userNameError(a.o.UserClaim, shown(p.User), err)
		}
	}
	if missing := MissingScopes(p.Scopes, a.o.RequiredScopes); len(missing) > 0 {
		return p, "", scopeError(missing)
	}
	if a.o.Users != nil {
		if err := a.o.Users.Bind(p); err != nil {
			return Principal{}, "", err
		}
	}
	return p, raw, nil
}

func (a *Authenticator) refuse(w http.ResponseWriter, r *http.Request, p Principal, err error) {
	reason := FailureReason(err)
	if a.o.OnFailure != nil {
		a.o.OnFailure(r, reason)
	}
	c := Challenge{Scopes: a.o.ChallengeScopes, ResourceMetadata: a.o.ResourceMetadataURL}
	status, code := http.StatusUnauthorized, "unauthorized"
	switch {
	case errors.Is(err, ErrNoToken):
		// RFC 6750 §3.1: no error code when no credentials were sent.
	case errors.Is(err, ErrUserRefused):
		// A genuine token whose user gemgate will never serve: 401 would send MCP clients to
		// sign in again to the same name; a 403 is not repeated (RFC 9110 §15.5.4).
		status, code = http.StatusForbidden, "invalid_token"
	case errors.Is(err, ErrInvalidRequest):
		code = "invalid_request"
	case reason == ReasonScope:
		status, code = http.StatusForbidden, "insufficient_scope"
		c.Scopes = union(p.Scopes, a.o.RequiredScopes)
	case errors.Is(err, ErrInvalidToken):
		code = "invalid_token"
	case errors.Is(err, ErrUserNamesFull):
		// Not over by waiting: no Retry-After, so that clients do not retry for ever.
		a.o.Logger.LogAttrs(r.Context(), slog.LevelError, "request refused by authentication: no room to bind another user name; raise max_user_names", RefusalLogAttrs(err)...)
		writeJSONError(w, http.StatusServiceUnavailable, "temporarily_unavailable", Describe(err))
		return
	case errors.Is(err, ErrKeysUnavailable), r.Context().Err() != nil:
		// No verdict on the token (keys not loaded, or the request ended while they were
		// fetched): 401 would make the client drop a good token; 503 asks it to come back.
		a.o.Logger.Debug("auth: request deferred, signing keys not loaded", slog.String("reason", reason))
		w.Header().Set("Retry-After", retryAfterSeconds)
		writeJSONError(w, http.StatusServiceUnavailable, "temporarily_unavailable", "the identity provider's signing keys are not loaded yet; retry later")
		return
	default:
		// A verifier fault. A foreign verifier's error text might quote the token: only
		// its reason is logged.
		a.o.Logger.Error("auth: token verification failed", slog.String("reason", reason))
		writeJSONError(w, http.StatusInternalServerError, "server_error", "token could not be verified")
		return
	}
	desc := Describe(err)
	if code != "unauthorized" {
		c.Error = code
		c.Description = desc
	}
	a.logRefusal(r, status, p, err)
	w.Header().Set("WWW-Authenticate", c.String())
	writeJSONError(w, status, code, desc)
}

// logRefusal logs a refusal with what the client is never told (RefusalLogAttrs). No token
// is how every OAuth client starts: debug level only.
func (a *Authenticator) logRefusal(r *http.Request, status int, p Principal, err error) {
	level := slog.LevelInfo
	if errors.Is(err, ErrNoToken) {
		level = slog.LevelDebug
	}
	if errors.Is(err, ErrUserRefused) {
		level = slog.LevelWarn // not a client's mistake: the operator must hear of it
	}
	if !a.o.Logger.Enabled(r.Context(), level) {
		return
	}
	attrs := append([]slog.Attr{slog.Int("status", status)}, RefusalLogAttrs(err)...)
	if status == http.StatusForbidden && p.User != "" {
		attrs = append(attrs, slog.String("user", p.User), slog.Any("granted_scopes", p.Scopes))
	}
	if a.o.RequestLogAttrs != nil {
		attrs = append(attrs, a.o.RequestLogAttrs(r)...)
	}
	a.o.Logger.LogAttrs(r.Context(), level, "request refused by authentication", attrs...)
}

// InsufficientScope sets WWW-Authenticate for a 403 step-up; the caller writes the status
// and body. scope = granted ∪ needed: clients that replace their scopes keep what they had.
func (a *Authenticator) InsufficientScope(h http.Header, granted, needed []string, description string) {
	h.Set("WWW-Authenticate", Challenge{
		Error:            "insufficient_scope",
		Scopes:           union(granted, needed),
		ResourceMetadata: a.o.ResourceMetadataURL,
		Description:      description,
	}.String())
}

// Anonymous is the `--auth none` middleware: every request gets p.
func Anonymous(p Principal) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			next.ServeHTTP(w, r.WithContext(WithPrincipal(r.Context(), p.clone())))
		})
	}
}

// MissingScopes is the required scopes a token's granted scopes lack, in required's order.
func MissingScopes(granted, required []string) []string {
	var missing []string // nil, without an allocation, for a token that has them all
	for _, s := range required {
		if !slices.Contains(granted, s) {
			missing = append(missing, s)
		}
	}
	return missing
}

func union(a, b []string) []string {
	out := make([]string, 0, len(a)+len(b))
	for _, s := range slices.Concat(a, b) {
		if !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	return out
}

// writeJSONError writes {"error":...,"error_description":...}.
func writeJSONError(w http.ResponseWriter, status int, code, description string) {
	body, _ := json.Marshal(struct {
		Error       string `json:"error"`
		Description string `json:"error_description,omitempty"`
	}{code, description})
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(status)
	_, _ = w.Write(append(body, '\n'))
}
