package auth

import (
	"cmp"
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/gemgate/gemgate/internal/clip"
)

// FindingStatus grades one line of a token explanation.
type FindingStatus int

const (
	FindingOK         FindingStatus = iota // this part would pass
	FindingProblem                         // this part makes gemgate refuse the token
	FindingInfo                            // context, no verdict (azp, scopes)
	FindingNotChecked                      // could not be checked (issuer unreachable)
)

// Finding is one line of [Explain]: a part of the token and what gemgate makes of it.
type Finding struct {
	Item   string
	Status FindingStatus
	Detail string
}

// Explanation is [Explain]'s account of a token.
type Explanation struct {
	Findings []Finding
	// Verdict is nil when gemgate would accept the token; otherwise the refusal, from the
	// verifier itself when the issuer's keys could be loaded (SignatureChecked).
	Verdict          error
	Principal        Principal // the accepted token's principal (Verdict nil)
	SignatureChecked bool
}

// Explain says, claim by claim, whether a verifier built from cfg would accept raw, for
// `gemgate check --token`. When the issuer's keys cannot be loaded it says so and still
// checks the claims. The findings hold header parameters and claim values, never the token.
func Explain(ctx context.Context, cfg Config, raw string) (Explanation, error) {
	v, err := prepareVerifier(cfg)
	if err != nil {
		return Explanation{}, err
	}
	x := &explainer{v: v}
	if len(raw) > maxTokenBytes {
		x.Verdict = malformedError("larger than 16 KiB")
		x.add("token", FindingProblem, "larger than 16 KiB")
		return x.Explanation, nil
	}
	tok, err := parseJWS(raw)
	if err != nil {
		x.Verdict = err
		x.add("header", FindingProblem, "%s", Describe(err))
		return x.Explanation, nil
	}
	x.add("header", FindingOK, "alg %s, kid %q", tok.alg, clip.String(cmp.Or(tok.kid, "(none)"), maxQuoted))

	keysErr := v.keys.refresh(ctx, 0)
	x.now = time.Now()
	x.signature(ctx, tok, keysErr)

	cs, err := parseClaimSet(tok.payload)
	if err != nil {
		x.problem("claims", err, strings.TrimPrefix(err.Error(), "auth: ")) // "malformed token: " and why
		x.Verdict = x.first
		return x.Explanation, nil
	}
	x.issuer(cs)
	x.audience(cs)
	x.times(cs)
	x.identity(cs)

	switch {
	case x.SignatureChecked:
		// The real verifier has the last word, so the verdict cannot drift from serving.
		x.Principal, x.Verdict = v.verify(ctx, raw, x.now)
	case x.first != nil:
		x.Verdict = x.first
	default:
		// The claims pass; a serving gemgate would answer 503 until the keys load.
		x.Verdict = keysUnavailableError(x.v.cfg.Issuer, keysErr)
	}
	return x.Explanation, nil
}

// explainer builds an [Explanation] one finding at a time.
type explainer struct {
	Explanation
	v     *Verifier
	now   time.Time
	first error // the first problem found: the verdict when the signature is not checked
}

func (x *explainer) add(item string, st FindingStatus, format string, args ...any) {
	x.Findings = append(x.Findings, Finding{Item: item, Status: st, Detail: fmt.Sprintf(format, args...)})
}

// problem adds a finding that makes gemgate refuse the token, err being the refusal.
func (x *explainer) problem(item string, err error, detail string) {
	if x.first == nil {
		x.first = err
	}
	x.add(item, FindingProblem, "%s", detail)
}

// signature checks the token's signature, unless keysErr says the keys could not be loaded.
func (x *explainer) signature(ctx context.Context, tok *parsedJWS, keysErr error) {
	if keysErr != nil {
		x.add("signature", FindingNotChecked, "the issuer's keys could not be loaded, so the signature is not checked: %v", keysErr)
		return
	}
	x.SignatureChecked = true
	kid := clip.String(cmp.Or(tok.kid, "(none)"), maxQuoted)
	pk, err := x.v.keys.Key(ctx, tok.kid)
	if err != nil {
		known := fmt.Sprintf(" (the issuer publishes %s)", strings.Join(quoteAll(x.v.keys.keyIDs()), ", "))
		x.problem("signature", unknownKeyError(tok.kid, err), fmt.Sprintf("no key of the issuer has kid %q%s", kid, known))
		return
	}
	if err := tok.verifySignature(pk); err != nil {
		x.problem("signature", err, Describe(err))
		return
	}
	x.add("signature", FindingOK, "verified with the issuer's key %q", kid)
}

// hinted is detail with the usual cause of err, a refusal that has one.
func hinted(detail string, err error) string {
	if e, ok := err.(*refusalError); ok && e.hint != "" {
		return detail + "\n         hint: " + e.hint
	}
	return detail
}

func (x *explainer) issuer(cs claimSet) {
	iss, err := x.v.checkIssuer(cs)
	switch {
	case FailureReason(err) == ReasonIssuer:
		x.problem("iss", err, hinted(fmt.Sprintf("%q, but gemgate accepts %q", clip.String(iss, maxQuoted), x.v.cfg.Issuer), err))
	case err != nil:
		x.problem("iss", err, "is not a string")
	default:
		x.add("iss", FindingOK, "%q", iss)
	}
}

// audience checks aud, and shows azp: the client the token was issued to.
func (x *explainer) audience(cs claimSet) {
	aud, err := x.v.checkAudience(cs)
	switch {
	case FailureReason(err) == ReasonAudience:
		x.problem("aud", err, hinted(fmt.Sprintf("%s names none of %s", listOrNone(aud), strings.Join(quoteAll(x.v.cfg.Audiences), ", ")), err))
	case err != nil:
		x.problem("aud", err, "is not a string or an array of strings")
	default:
		x.add("aud", FindingOK, "%s includes an accepted audience", listOrNone(aud))
	}
	if azp, _, _ := cs.str(claimAuthorizedParty); azp != "" {
		x.add("azp", FindingInfo, "%q (the client the token was issued to)", clip.String(azp, maxQuoted))
	}
}

// times checks exp (required), nbf and iat as the verifier does, at this clock.
func (x *explainer) times(cs claimSet) {
	for _, name := range timeClaims {
		at, present, err := checkTime(cs, name, x.now)
		when := at.UTC().Format(time.RFC3339)
		switch FailureReason(err) {
		case ReasonExpired:
			x.problem(name, err, fmt.Sprintf("%s: expired %s ago (allowed clock skew %s)", when, x.now.Sub(at).Truncate(time.Second), DefaultClockSkew))
		case ReasonNotYetValid:
			x.problem(name, err, fmt.Sprintf("%s is %s ahead of this clock (allowed skew %s)", when, at.Sub(x.now).Truncate(time.Second), DefaultClockSkew))
		case "":
			if name == claimExpiry {
				x.add(name, FindingOK, "%s: valid for another %s", when, at.Sub(x.now).Truncate(time.Second))
			} else if present {
				x.add(name, FindingOK, "%s", when)
			}
		default:
			if !present {
				x.problem(name, err, "is missing; gemgate requires it")
			} else {
				x.problem(name, err, Describe(err))
			}
		}
	}
}

// identity checks sub and the user claim, and shows the scopes.
func (x *explainer) identity(cs claimSet) {
	if sub, err := subject(cs); err != nil {
		x.problem("sub", err, Describe(err))
	} else {
		x.add("sub", FindingOK, "%q", clip.String(sub, maxQuoted))
	}
	if userClaim := x.v.cfg.UserClaim; userClaim != claimSubject {
		if user, err := requiredString(cs, userClaim); err != nil {
			x.problem(userClaim, err, Describe(err)+" (user_claim names it)")
		} else {
			x.add(userClaim, FindingOK, "%q (the user, from user_claim)", clip.String(user, maxQuoted))
		}
	}
	if scopes, err := tokenScopes(cs); err != nil {
		x.problem("scope", err, Describe(err))
	} else {
		x.add("scope", FindingInfo, "%s", listOrNone(scopes))
	}
}

func quoteAll(s []string) []string {
	out := make([]string, len(s))
	for i, x := range s {
		out[i] = fmt.Sprintf("%q", clip.String(x, maxQuoted))
	}
	return out
}

func listOrNone(s []string) string {
	if len(s) == 0 {
		return "(none)"
	}
	return strings.Join(quoteAll(s), " ")
}
