package auth

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"io"
	"math"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/go-json-experiment/json/jsontext"

	gjsontext "github.com/gemgate/gemgate/internal/jsontext"
)

// maxClaimsDepth bounds the nesting of a claims object (the object itself is depth 1).
const maxClaimsDepth = 32

// Latest NumericDate accepted: 9999-12-31T23:59:59Z. No issuer means a later one.
const maxNumericDate = 253402300799

// claimSet is a verified payload read as exactly one JSON object, and nothing else. jwx's
// jwt.ParseInsecure would take a payload that is itself a JWS in JSON serialization and
// return its inner, unsigned claims. So the payload is checked strictly first: one object,
// nothing after it, no name twice at any depth, bounded depth, valid UTF-8 and no lone
// surrogate escape (encoding/json reads "\ud800" and "\udc00" alike as U+FFFD).
type claimSet map[string]any

// parseClaimSet reads payload strictly. Every error is a malformedError with a
// fixed reason.
func parseClaimSet(payload []byte) (claimSet, error) {
	if !utf8.Valid(payload) {
		return nil, malformedError("claims are not valid UTF-8")
	}
	if gjsontext.HasLoneSurrogate(payload) {
		return nil, malformedError("claims hold a lone UTF-16 surrogate escape")
	}
	if err := checkOneObject(payload); err != nil {
		return nil, err
	}
	dec := json.NewDecoder(bytes.NewReader(payload))
	dec.UseNumber()
	var cs claimSet
	if err := dec.Decode(&cs); err != nil {
		return nil, malformedError("unparsable claims")
	}
	if _, err := exactNumbers(map[string]any(cs)); err != nil {
		return nil, malformedError("unparsable claims")
	}
	return cs, nil
}

// exactNumbers is v with each number as the issuer wrote it, for the rules that compare
// claims: an integer as an int64 (or a uint64 above int64's range), any other number as a
// float64. Read as float64 alone, an integer id past 2^53 is one number with its neighbours
// (1234567890123456789 and ...790), and a rule for one id would hold for the others. A
// number past float64's range fails the payload, as encoding/json's reading of it does.
func exactNumbers(v any) (any, error) {
	switch x := v.(type) {
	case json.Number:
		if i, err := strconv.ParseInt(x.String(), 10, 64); err == nil {
			return i, nil
		}
		if u, err := strconv.ParseUint(x.String(), 10, 64); err == nil {
			return u, nil
		}
		return strconv.ParseFloat(x.String(), 64)
	case map[string]any:
		for k, e := range x {
			var err error
			if x[k], err = exactNumbers(e); err != nil {
				return nil, err
			}
		}
	case []any:
		for i, e := range x {
			var err error
			if x[i], err = exactNumbers(e); err != nil {
				return nil, err
			}
		}
	}
	return v, nil
}

// checkOneObject reads payload as exactly one object, no member name twice in any object,
// at most maxClaimsDepth levels, nothing after it but whitespace.
func checkOneObject(payload []byte) error {
	const notObject = "claims are not one JSON object"
	dec := jsontext.NewDecoder(bytes.NewReader(payload))
	if dec.PeekKind() != '{' {
		return malformedError(notObject)
	}
	for {
		_, err := dec.ReadToken()
		switch {
		case errors.Is(err, jsontext.ErrDuplicateName):
			return malformedError("claims name a member twice")
		case err != nil:
			return malformedError(notObject)
		case dec.StackDepth() > maxClaimsDepth:
			return malformedError("claims nested too deeply")
		}
		if dec.StackDepth() == 0 {
			break
		}
	}
	if _, err := dec.ReadToken(); err != io.EOF {
		return malformedError("data after the claims object")
	}
	return nil
}

// has reports whether the claim is present (null counts as present).
func (c claimSet) has(name string) bool {
	_, ok := c[name]
	return ok
}

// str returns a string claim; ok is false when it is absent.
func (c claimSet) str(name string) (s string, ok bool, err error) {
	v, present := c[name]
	if !present {
		return "", false, nil
	}
	s, isStr := v.(string)
	if !isStr {
		return "", true, claimError(name, "is not a string")
	}
	return s, true, nil
}

// strings returns a claim that is a string or an array of strings (aud, scp); split
// turns a lone string into several at each space (scopes, some maybe empty).
func (c claimSet) strings(name string, split bool) ([]string, error) {
	v, present := c[name]
	if !present {
		return nil, nil
	}
	switch x := v.(type) {
	case string:
		if split {
			return strings.Split(x, " "), nil
		}
		return []string{x}, nil
	case []any:
		out := make([]string, 0, len(x))
		for _, e := range x {
			s, ok := e.(string)
			if !ok {
				return nil, claimError(name, "is not a string or an array of strings")
			}
			out = append(out, s)
		}
		return out, nil
	}
	return nil, claimError(name, "is not a string or an array of strings")
}

// numericDate reads an RFC 7519 NumericDate: a JSON number of seconds since the epoch,
// possibly with a fraction. Strings, null, booleans and dates past year 9999 are refused.
func (c claimSet) numericDate(name string) (t time.Time, ok bool, err error) {
	v, present := c[name]
	if !present {
		return time.Time{}, false, nil
	}
	// A number is an int64, a uint64 or a float64 (exactNumbers); one past float64's range
	// failed the whole payload. A whole NumericDate in range is below 2^53, which a float64
	// holds exactly.
	var f float64
	isNumber := true
	switch n := v.(type) {
	case int64:
		f = float64(n)
	case uint64:
		f = float64(n)
	case float64:
		f = n
	default:
		isNumber = false
	}
	switch {
	case !isNumber:
		return time.Time{}, true, claimError(name, "is not a NumericDate (a JSON number of seconds)")
	case f < 0 || f > maxNumericDate:
		return time.Time{}, true, claimError(name, "is out of range")
	}
	sec, frac := math.Modf(f)
	return time.Unix(int64(sec), int64(frac*1e9)), true, nil
}

// UnverifiedAudience reads the aud claim of a compact JWS without checking its signature, as
// Verify reads it. isJWT is false for a token of another form (an opaque one), whose audience
// only its issuer knows; err is set for a JWT whose claims that reading refuses.
func UnverifiedAudience(token string) (aud []string, isJWT bool, err error) {
	parts := strings.Split(token, ".")
	if len(parts) != 3 {
		return nil, false, nil
	}
	payload, err := base64.RawURLEncoding.DecodeString(parts[1])
	if trimmed := bytes.TrimLeft(payload, " \t\r\n"); err != nil || len(trimmed) == 0 || trimmed[0] != '{' {
		return nil, false, nil
	}
	cs, err := parseClaimSet(payload)
	if err != nil {
		return nil, true, err
	}
	aud, err = cs.strings(claimAudience, false)
	return aud, true, err
}
