package auth

import (
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/gemgate/gemgate/internal/clip"
)

// ErrInvalidToken is wrapped by every token verification failure.
var ErrInvalidToken = errors.New("auth: invalid token")

// ErrNoToken means the request carried no bearer token (including requests
// that used another authentication scheme, which RFC 6750 §3.1 treats alike).
var ErrNoToken = errors.New("auth: no bearer token")

// ErrKeysUnavailable is wrapped by the refusal of a token while the issuer's signing keys
// have not been loaded yet, so no token can be judged. It is not [ErrInvalidToken]: the
// answer is 503 with Retry-After, never 401, or clients would throw away good tokens.
var ErrKeysUnavailable = errors.New("auth: issuer signing keys not loaded")

// ErrInvalidRequest is wrapped by [BearerToken] failures where the request
// carried a token in a way gemgate refuses (query string, two headers, empty).
var ErrInvalidRequest = errors.New("auth: invalid authorization request")

// Failure reasons returned by [FailureReason]. The set is closed so the
// values can label metrics.
const (
	ReasonMissing     = "missing"
	ReasonRequest     = "request"
	ReasonMalformed   = "malformed"
	ReasonAlgorithm   = "algorithm"
	ReasonHeader      = "header"
	ReasonUnknownKey  = "unknown_key"
	ReasonSignature   = "signature"
	ReasonIssuer      = "issuer"
	ReasonAudience    = "audience"
	ReasonExpired     = "expired"
	ReasonNotYetValid = "not_yet_valid"
	ReasonClaims      = "claims"
	ReasonScope       = "scope"
	ReasonInternal    = "internal"
	ReasonUnavailable = "keys_unavailable"
	ReasonUserName    = "user_name"
	ReasonUserTaken   = "user_taken"
	ReasonUserFull    = "user_names_full"
	ReasonUserRenames = "user_names_per_subject"
)

// refusalError is a refusal of a request's token, made once with all that is said of it:
// the sentinel it wraps, its reason ([FailureReason]), the fixed phrase the client is told
// ([Describe]) and, for the log only ([RefusalLogAttrs]), what the token says of itself, the
// refusal's facts and the usual cause of it.
type refusalError struct {
	kind   error // ErrInvalidToken, ErrUserRefused, ...; nil for a missing scope (403)
	cause  error // wrapped too: the launcher's reason, the keys' fetch error
	reason string
	text   string      // Error()
	desc   string      // never the token's content
	facts  []slog.Attr // what the token says of itself (withFacts), logged first
	attrs  []slog.Attr // the refusal's own facts (expected values, times), logged next
	hint   string      // the usual cause, logged last and shown by Explain
}

func (e *refusalError) Error() string   { return e.text }
func (e *refusalError) Unwrap() []error { return []error{e.kind, e.cause} }

// invalid is a refusal of the token itself, with the refusal's facts for the log.
func invalid(reason, text, desc string, attrs ...slog.Attr) *refusalError {
	return &refusalError{kind: ErrInvalidToken, reason: reason, text: text, desc: desc, attrs: attrs}
}

// because makes cause the refusal's cause, which its text names.
func (e *refusalError) because(cause error) *refusalError {
	e.cause = cause
	if cause != nil {
		e.text += ": " + cause.Error()
	}
	return e
}

// malformedError: the token is not a well-formed compact JWS with a JSON claims object, or
// is too large to parse.
func malformedError(problem string) error {
	return invalid(ReasonMalformed, "auth: malformed token: "+problem, "malformed token",
		slog.String("problem", problem))
}

// algorithmError: the token's alg is not an accepted asymmetric algorithm, or does not fit
// the key it names.
func algorithmError(alg string) error {
	alg = clip.String(alg, maxQuoted)
	return invalid(ReasonAlgorithm, fmt.Sprintf("auth: token algorithm %q not accepted", alg),
		"token algorithm not accepted", slog.String("token_alg", alg))
}

// headerError: the token's JOSE header carries a parameter gemgate refuses (jwk, jku, x5u,
// x5c, crit, b64, cty).
func headerError(name string) error {
	return invalid(ReasonHeader, fmt.Sprintf("auth: token header %q not accepted", name),
		"token header not accepted", slog.String("header", name))
}

// unknownKeyError: no signing key of the issuer has the token's kid, even after the key set
// was refreshed (or a refresh was not yet due); cause is the lookup's error.
func unknownKeyError(kid string, cause error) error {
	return invalid(ReasonUnknownKey, fmt.Sprintf("auth: unknown signing key %q", clip.String(kid, maxQuoted)),
		"token signing key not known").because(cause)
}

// keysUnavailableError: no signing key of the issuer has been loaded since start (the issuer
// or its JWKS did not answer); cause is the last attempt's error, nil before the first ended.
func keysUnavailableError(issuer string, cause error) error {
	e := &refusalError{kind: ErrKeysUnavailable, reason: ReasonUnavailable,
		text: fmt.Sprintf("auth: signing keys of issuer %q not loaded yet", issuer),
		desc: "the identity provider's signing keys are not loaded yet"}
	return e.because(cause)
}

// signatureError: the signature does not verify with the issuer's key (cause says how, for
// no text).
func signatureError(cause error) error {
	e := invalid(ReasonSignature, "auth: token signature invalid", "token signature invalid")
	e.cause = cause
	return e
}

// issuerError: iss is not the configured issuer (expected). Both are for the log, never for
// the client; the token's iss is logged here until withFacts tells the token's facts.
func issuerError(iss, expected string) error {
	e := invalid(ReasonIssuer, fmt.Sprintf("auth: token issuer %q not accepted", clip.String(iss, maxQuoted)),
		"token issuer not accepted", slog.String("expected_iss", expected))
	e.facts = []slog.Attr{slog.String("iss", clip.String(iss, maxQuoted))}
	e.hint = issuerHint(iss, expected)
	return e
}

// audienceError: aud names none of the accepted audiences (expected); azp is the client the
// token was issued to, where an audience mapper would be added.
func audienceError(aud, expected []string, azp string) error {
	e := invalid(ReasonAudience,
		fmt.Sprintf("auth: token audience %q not accepted", clip.String(strings.Join(aud, " "), maxQuoted)),
		"token audience not accepted", slog.Any("expected_aud", expected))
	e.facts = []slog.Attr{slog.Any("aud", aud)}
	var first string
	if len(expected) > 0 {
		first = expected[0]
	}
	e.hint = fmt.Sprintf("the token's aud must contain %q (gemgate's public MCP URL, public_url) or a value of the audiences setting", first)
	if azp != "" {
		e.hint += fmt.Sprintf("; on Keycloak, give client %q an audience mapper (or client scope) that adds it", azp)
	}
	return e
}

// expiredError: exp has passed, beyond DefaultClockSkew, at now.
func expiredError(exp, now time.Time) error {
	ago := now.Sub(exp)
	e := invalid(ReasonExpired, "auth: token expired at "+exp.UTC().Format(time.RFC3339), "token expired",
		slog.Time("exp", exp), slog.Time("now", now),
		slog.Duration("expired_for", ago.Truncate(time.Second)), slog.Duration("allowed_skew", DefaultClockSkew))
	if ago < 5*time.Minute && ago > 0 {
		e.hint = "the token expired moments ago: the client should refresh it; if fresh tokens fail too, gemgate's clock is ahead of the issuer's"
	}
	return e
}

// notYetValidError: the time claim ("nbf" or "iat") is at, ahead of now beyond DefaultClockSkew.
func notYetValidError(claim string, at, now time.Time) error {
	e := invalid(ReasonNotYetValid,
		fmt.Sprintf("auth: token %s %s is in the future", claim, at.UTC().Format(time.RFC3339)), "token not yet valid",
		slog.Time(claim, at), slog.Time("now", now),
		slog.Duration("clock_skew", at.Sub(now).Truncate(time.Second)), slog.Duration("allowed_skew", DefaultClockSkew))
	e.hint = "the issuer's clock is ahead of gemgate's: synchronise both clocks (NTP)"
	return e
}

// claimError: a required claim is missing, empty or of the wrong type; problem says which.
func claimError(claim, problem string) error {
	shown := clip.String(claim, maxQuoted)
	return invalid(ReasonClaims, fmt.Sprintf("auth: token claim %q %s", shown, problem),
		fmt.Sprintf("token claim %s %s", claim, problem),
		slog.String("claim", shown), slog.String("problem", problem))
}

// scopeError: the token is valid but lacks required scopes. Not ErrInvalidToken: the answer
// is 403, not 401.
func scopeError(missing []string) error {
	return &refusalError{reason: ReasonScope, text: "auth: missing scopes " + strings.Join(missing, " "),
		desc: "required scope missing", attrs: []slog.Attr{slog.Any("missing_scopes", missing)}}
}

// FailureReason returns a bounded label for err, for metrics and logs.
// It returns "" for nil.
func FailureReason(err error) string {
	if e, ok := errors.AsType[*refusalError](err); ok {
		return e.reason
	}
	switch {
	case err == nil:
		return ""
	case errors.Is(err, ErrNoToken):
		return ReasonMissing
	case errors.Is(err, ErrInvalidToken):
		return ReasonMalformed
	}
	return ReasonInternal
}

// Describe returns the error_description for a failure: a fixed phrase per
// reason, so attacker-chosen token content never reaches a response.
func Describe(err error) string {
	if e, ok := errors.AsType[*refusalError](err); ok {
		return e.desc
	}
	switch {
	case errors.Is(err, ErrNoToken):
		return "bearer token required"
	case errors.Is(err, ErrInvalidToken):
		return "malformed token"
	}
	return "token could not be verified"
}

// RefusalLogAttrs returns, for a token verification failure, log attributes that say why:
// the reason, the token's kid and alg, the received and expected iss and aud, the azp, the
// clock skew seen, and a hint for well-known misconfigurations. Never the token or its
// signature; for the log only (the HTTP answer carries a fixed phrase).
func RefusalLogAttrs(err error) []slog.Attr {
	if err == nil {
		return nil
	}
	attrs := []slog.Attr{slog.String("reason", FailureReason(err))}
	if e, ok := errors.AsType[*refusalError](err); ok {
		attrs = append(append(attrs, e.facts...), e.attrs...)
		if e.hint != "" {
			attrs = append(attrs, slog.String("hint", e.hint))
		}
	}
	return attrs
}

// maxQuoted bounds a value of the token's (a claim, a kid, an alg) quoted in an error or a
// log line: the token is the caller's to fill.
const maxQuoted = 64
