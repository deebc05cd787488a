package auth

import (
	"cmp"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/gemgate/gemgate/internal/clip"
)

// ErrInvalidToken is wrapped by every token verification failure.
var ErrInvalidToken = errors.New("auth: invalid token")

// ErrNoToken means the request carried no bearer token (including requests
// that used another authentication scheme, which RFC 6750 §3.1 treats alike).
var ErrNoToken = errors.New("auth: no bearer token")

// ErrKeysUnavailable is wrapped by [KeysUnavailableError]: the issuer's signing keys have
// not been loaded yet, so no token can be judged. It is not [ErrInvalidToken]: the answer
// is 503 with Retry-After, never 401, or clients would throw away good tokens.
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

// MalformedTokenError: the token is not a well-formed compact JWS with a JSON
// claims object, or is too large to parse.
type MalformedTokenError struct{ Reason string }

func (e *MalformedTokenError) Error() string { return "auth: malformed token: " + e.Reason }
func (e *MalformedTokenError) Unwrap() error { return ErrInvalidToken }

// AlgorithmError: the token's alg is not an accepted asymmetric algorithm, or
// does not fit the key it names.
type AlgorithmError struct{ Algorithm string }

func (e *AlgorithmError) Error() string {
	return fmt.Sprintf("auth: token algorithm %q not accepted", clip.String(e.Algorithm, maxQuoted))
}
func (e *AlgorithmError) Unwrap() error { return ErrInvalidToken }

// ForbiddenHeaderError: the token's JOSE header carries a parameter gemgate
// refuses (jwk, jku, x5u, x5c, crit, b64, cty).
type ForbiddenHeaderError struct{ Header string }

func (e *ForbiddenHeaderError) Error() string {
	return fmt.Sprintf("auth: token header %q not accepted", e.Header)
}
func (e *ForbiddenHeaderError) Unwrap() error { return ErrInvalidToken }

// UnknownKeyError: no signing key of the issuer has the token's kid, even
// after the key set was refreshed (or a refresh was not yet due).
type UnknownKeyError struct {
	KeyID string
	Err   error
}

func (e *UnknownKeyError) Error() string {
	s := fmt.Sprintf("auth: unknown signing key %q", clip.String(e.KeyID, maxQuoted))
	if e.Err != nil {
		s += ": " + e.Err.Error()
	}
	return s
}
func (e *UnknownKeyError) Unwrap() []error { return []error{ErrInvalidToken, e.Err} }

// KeysUnavailableError: no signing key of the issuer has been loaded since start (the
// issuer or its JWKS did not answer). Err is the last attempt's error, nil before the
// first attempt ended.
type KeysUnavailableError struct {
	Issuer string
	Err    error
}

func (e *KeysUnavailableError) Error() string {
	s := fmt.Sprintf("auth: signing keys of issuer %q not loaded yet", e.Issuer)
	if e.Err != nil {
		s += ": " + e.Err.Error()
	}
	return s
}
func (e *KeysUnavailableError) Unwrap() []error { return []error{ErrKeysUnavailable, e.Err} }

// SignatureError: the signature does not verify with the issuer's key.
type SignatureError struct{ Err error }

func (e *SignatureError) Error() string   { return "auth: token signature invalid" }
func (e *SignatureError) Unwrap() []error { return []error{ErrInvalidToken, e.Err} }

// InvalidIssuerError: iss is not the configured issuer. Issuer is the token's, Expected
// the configured one; both are for the log, never for the client.
type InvalidIssuerError struct{ Issuer, Expected string }

func (e *InvalidIssuerError) Error() string {
	return fmt.Sprintf("auth: token issuer %q not accepted", clip.String(e.Issuer, maxQuoted))
}
func (e *InvalidIssuerError) Unwrap() error { return ErrInvalidToken }

// InvalidAudienceError: aud names none of the configured audiences. Expected are the
// accepted audiences and AuthorizedParty the token's azp (the client it was issued to,
// where an audience mapper would be added), for the log.
type InvalidAudienceError struct {
	Audience        []string
	Expected        []string
	AuthorizedParty string
}

func (e *InvalidAudienceError) Error() string {
	return fmt.Sprintf("auth: token audience %q not accepted", clip.String(strings.Join(e.Audience, " "), maxQuoted))
}
func (e *InvalidAudienceError) Unwrap() error { return ErrInvalidToken }

// TokenExpiredError: exp has passed (beyond the clock skew). Now and Skew are the
// verifier's clock and allowance when it decided.
type TokenExpiredError struct {
	Expiry, Now time.Time
	Skew        time.Duration
}

func (e *TokenExpiredError) Error() string {
	return "auth: token expired at " + e.Expiry.UTC().Format(time.RFC3339)
}
func (e *TokenExpiredError) Unwrap() error { return ErrInvalidToken }

// NotYetValidError: nbf is in the future, or iat is (both beyond the clock skew).
type NotYetValidError struct {
	Claim   string // "nbf" or "iat"
	At, Now time.Time
	Skew    time.Duration
}

func (e *NotYetValidError) Error() string {
	return fmt.Sprintf("auth: token %s %s is in the future", e.Claim, e.At.UTC().Format(time.RFC3339))
}
func (e *NotYetValidError) Unwrap() error { return ErrInvalidToken }

// ClaimError: a required claim is missing, empty or of the wrong type.
type ClaimError struct {
	Claim  string
	Reason string
}

func (e *ClaimError) Error() string {
	return fmt.Sprintf("auth: token claim %q %s", clip.String(e.Claim, maxQuoted), e.Reason)
}
func (e *ClaimError) Unwrap() error { return ErrInvalidToken }

// InsufficientScopeError: the token is valid but lacks required scopes.
// It does not wrap [ErrInvalidToken]: the answer is 403, not 401.
type InsufficientScopeError struct{ Missing []string }

func (e *InsufficientScopeError) Error() string {
	return "auth: missing scopes " + strings.Join(e.Missing, " ")
}

// FailureReason returns a bounded label for err, for metrics and logs.
// It returns "" for nil.
func FailureReason(err error) string {
	if err == nil {
		return ""
	}
	return failureOf(err).reason
}

type failure struct {
	match       func(error) bool
	reason      string
	description string // Describe's fixed phrase; "" for "malformed token" or finer words
}

// failures label errors; the first match wins.
var failures = []failure{
	{errIs(ErrNoToken), ReasonMissing, "bearer token required"},
	{errAs[*UserNameError], ReasonUserName, ""},
	{errAs[*UserTakenError], ReasonUserTaken, ""},
	{errAs[*SubjectNamesError], ReasonUserRenames, ""},
	{errIs(ErrUserNamesFull), ReasonUserFull, ""},
	{errIs(ErrInvalidRequest), ReasonRequest, "malformed authorization request"},
	{errIs(ErrKeysUnavailable), ReasonUnavailable, "the identity provider's signing keys are not loaded yet"},
	{errAs[*MalformedTokenError], ReasonMalformed, ""},
	{errAs[*AlgorithmError], ReasonAlgorithm, "token algorithm not accepted"},
	{errAs[*ForbiddenHeaderError], ReasonHeader, "token header not accepted"},
	{errAs[*UnknownKeyError], ReasonUnknownKey, "token signing key not known"},
	{errAs[*SignatureError], ReasonSignature, "token signature invalid"},
	{errAs[*InvalidIssuerError], ReasonIssuer, "token issuer not accepted"},
	{errAs[*InvalidAudienceError], ReasonAudience, "token audience not accepted"},
	{errAs[*TokenExpiredError], ReasonExpired, "token expired"},
	{errAs[*NotYetValidError], ReasonNotYetValid, "token not yet valid"},
	{errAs[*ClaimError], ReasonClaims, ""},
	{errAs[*InsufficientScopeError], ReasonScope, "required scope missing"},
	{errIs(ErrInvalidToken), ReasonMalformed, ""},
}

func failureOf(err error) failure {
	for _, f := range failures {
		if f.match(err) {
			return f
		}
	}
	return failure{reason: ReasonInternal, description: "token could not be verified"}
}

func errIs(target error) func(error) bool {
	return func(err error) bool { return errors.Is(err, target) }
}

func errAs[E error](err error) bool {
	_, ok := errors.AsType[E](err)
	return ok
}

// Describe returns the error_description for a failure: a fixed phrase per
// reason, so attacker-chosen token content never reaches a response.
func Describe(err error) string {
	var (
		claim     *ClaimError
		userName  *UserNameError
		userTaken *UserTakenError
		renames   *SubjectNamesError
	)
	switch {
	case errors.As(err, &claim):
		return fmt.Sprintf("token claim %s %s", claim.Claim, claim.Reason)
	case errors.As(err, &userName):
		// The launcher's reason is a fixed phrase, never the name.
		return fmt.Sprintf("token claim %s: %v; gemgate cannot run a worker as this user, so it will not serve this account", userName.Claim, userName.Err)
	case errors.As(err, &userTaken):
		return fmt.Sprintf("token claim %s names a user that another account (subject) holds at this gateway; ask the operator", userTaken.Claim)
	case errors.As(err, &renames):
		return fmt.Sprintf("token claim %s names a new user for an account that has used %d user names at this gateway already; ask the operator", renames.Claim, renames.Max)
	case errors.Is(err, ErrUserNamesFull):
		return "the gateway cannot serve a new user until its operator raises max_user_names"
	}
	f := failureOf(err)
	if re, ok := errors.AsType[*requestError](err); ok && f.reason == ReasonRequest {
		return re.msg
	}
	return cmp.Or(f.description, "malformed token")
}

// maxQuoted bounds a value of the token's (a claim, a kid, an alg) quoted in an error or a
// log line: the token is the caller's to fill.
const maxQuoted = 64
