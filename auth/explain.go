package auth

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"
)

// FindingStatus grades one line of a token explanation.
type FindingStatus int

const (
	FindingOK         FindingStatus = iota // this part would pass
	FindingProblem                         // this part makes gemgate refuse the token
	FindingInfo                            // context, no verdict (azp, scopes)
	FindingNotChecked                      // could not be checked (issuer unreachable)
)

// Finding is one line of [Explain]: a part of the token (header, signature, a claim) and
// what gemgate makes of it.
type Finding struct {
	Item   string
	Status FindingStatus
	Detail string
}

// Explanation is [Explain]'s account of a token.
type Explanation struct {
	Findings []Finding
	// Verdict is nil when gemgate would accept the token; otherwise the refusal, from the
	// verifier itself when the issuer's keys could be loaded.
	Verdict error
	// Principal is the accepted token's principal (Verdict nil).
	Principal Principal
	// SignatureChecked is false when the issuer's keys could not be loaded: the verdict then
	// covers the claims only.
	SignatureChecked bool
}

// Explain says, claim by claim, whether a verifier built from cfg would accept raw, for
// `gemgate check --token`. It loads the issuer's keys to check the signature; when they
// cannot be loaded it says so and still checks the claims. The token is never part of the
// findings, only its header parameters and claim values.
func Explain(ctx context.Context, cfg Config, raw string) (Explanation, error) {
	v, ks, err := prepareVerifier(cfg, time.Now)
	if err != nil {
		return Explanation{}, err
	}
	var e Explanation
	add := func(item string, st FindingStatus, format string, args ...any) {
		e.Findings = append(e.Findings, Finding{Item: item, Status: st, Detail: fmt.Sprintf(format, args...)})
	}
	if len(raw) > maxTokenBytes {
		e.Verdict = &MalformedTokenError{Reason: "larger than 16 KiB"}
		add("token", FindingProblem, "larger than 16 KiB")
		return e, nil
	}
	tok, err := parseJWS(raw)
	if err != nil {
		e.Verdict = err
		add("header", FindingProblem, "%s", describe(err))
		return e, nil
	}
	kid := tok.kid
	if kid == "" {
		kid = "(none)"
	}
	add("header", FindingOK, "alg %s, kid %q", tok.alg, clip(kid))

	keysErr := error(nil)
	if ks != nil {
		keysErr = ks.refresh(ctx, 0)
	}
	now := v.now()
	var firstProblem error
	problem := func(item string, err error, detail string) {
		if firstProblem == nil {
			firstProblem = err
		}
		add(item, FindingProblem, "%s", detail)
	}
	switch {
	case keysErr != nil:
		add("signature", FindingNotChecked, "the issuer's keys could not be loaded, so the signature is not checked: %v", keysErr)
	default:
		e.SignatureChecked = true
		pk, err := v.keys.Key(ctx, tok.kid)
		switch {
		case err != nil:
			known := ""
			if ks != nil {
				known = fmt.Sprintf(" (the issuer publishes %s)", strings.Join(quoteAll(ks.keyIDs()), ", "))
			}
			problem("signature", &UnknownKeyError{KeyID: tok.kid, Err: err}, "no key of the issuer has kid "+fmt.Sprintf("%q", clip(kid))+known)
		default:
			if err := tok.verifySignature(pk); err != nil {
				problem("signature", err, describe(err))
			} else {
				add("signature", FindingOK, "verified with the issuer's key %q", clip(kid))
			}
		}
	}

	cs, err := parseClaimSet(tok.payload)
	if err != nil {
		detail := describe(err)
		var me *MalformedTokenError
		if errors.As(err, &me) {
			detail += ": " + me.Reason
		}
		problem("claims", err, detail)
		e.Verdict = firstProblem
		return e, nil
	}
	cfg = v.cfg
	if iss, _, err := cs.str(claimIssuer); err != nil {
		problem("iss", err, "is not a string")
	} else if iss != cfg.Issuer {
		d := fmt.Sprintf("%q, but gemgate accepts %q", clip(iss), cfg.Issuer)
		if h := issuerHint(iss, cfg.Issuer); h != "" {
			d += "\n         hint: " + h
		}
		problem("iss", &InvalidIssuerError{Issuer: iss, Expected: cfg.Issuer}, d)
	} else {
		add("iss", FindingOK, "%q", iss)
	}
	azp, _, _ := cs.str(claimAuthorizedParty)
	if aud, err := cs.strings(claimAudience, false); err != nil {
		problem("aud", err, "is not a string or an array of strings")
	} else if !audienceMatches(aud, cfg.Audiences) {
		ae := &InvalidAudienceError{Audience: aud, Expected: cfg.Audiences, AuthorizedParty: azp}
		problem("aud", ae, fmt.Sprintf("%s names none of %s\n         hint: %s", listOrNone(aud), strings.Join(quoteAll(cfg.Audiences), ", "), refusalHint(ae)))
	} else {
		add("aud", FindingOK, "%s includes an accepted audience", listOrNone(aud))
	}
	if azp != "" {
		add("azp", FindingInfo, "%q (the client the token was issued to)", clip(azp))
	}
	exp, hasExp, err := cs.numericDate(claimExpiry)
	switch {
	case err != nil:
		problem("exp", err, describe(err))
	case !hasExp:
		problem("exp", &ClaimError{Claim: claimExpiry, Reason: "is missing"}, "is missing; gemgate requires it")
	case !now.Before(exp.Add(cfg.ClockSkew)):
		problem("exp", &TokenExpiredError{Expiry: exp, Now: now, Skew: cfg.ClockSkew},
			fmt.Sprintf("%s: expired %s ago (allowed clock skew %s)", exp.UTC().Format(time.RFC3339), now.Sub(exp).Truncate(time.Second), cfg.ClockSkew))
	default:
		add("exp", FindingOK, "%s: valid for another %s", exp.UTC().Format(time.RFC3339), exp.Sub(now).Truncate(time.Second))
	}
	for _, name := range []string{claimNotBefore, claimIssuedAt} {
		at, ok, err := cs.numericDate(name)
		switch {
		case err != nil:
			problem(name, err, describe(err))
		case !ok:
		case now.Add(cfg.ClockSkew).Before(at):
			problem(name, &NotYetValidError{Claim: name, At: at, Now: now, Skew: cfg.ClockSkew},
				fmt.Sprintf("%s is %s ahead of this clock (allowed skew %s)", at.UTC().Format(time.RFC3339), at.Sub(now).Truncate(time.Second), cfg.ClockSkew))
		default:
			add(name, FindingOK, "%s", at.UTC().Format(time.RFC3339))
		}
	}
	if sub, _, err := cs.str(claimSubject); err != nil || sub == "" {
		problem("sub", &ClaimError{Claim: claimSubject, Reason: "is missing or empty"}, "is missing, empty or not a string")
	} else {
		add("sub", FindingOK, "%q", clip(sub))
	}
	if cfg.UserClaim != claimSubject {
		if user, err := requiredString(cs, cfg.UserClaim); err != nil {
			problem(cfg.UserClaim, err, describe(err)+" (user_claim names it)")
		} else {
			add(cfg.UserClaim, FindingOK, "%q (the user, from user_claim)", clip(user))
		}
	}
	if scopes, err := tokenScopes(cs); err != nil {
		problem("scope", err, describe(err))
	} else {
		add("scope", FindingInfo, "%s", listOrNone(scopes))
	}

	switch {
	case e.SignatureChecked:
		// The real verifier has the last word, so the verdict cannot drift from serving.
		e.Principal, e.Verdict = v.verify(ctx, raw, now)
	case firstProblem != nil:
		e.Verdict = firstProblem
	default:
		// The claims pass; without the keys the token cannot be judged, and a serving
		// gemgate would answer 503 until they load.
		e.Verdict = &KeysUnavailableError{Issuer: cfg.Issuer, Err: keysErr}
	}
	return e, nil
}

// Describe is the fixed phrase gemgate's answer gives for a verification error.
func Describe(err error) string { return describe(err) }

func quoteAll(s []string) []string {
	out := make([]string, len(s))
	for i, x := range s {
		out[i] = fmt.Sprintf("%q", clip(x))
	}
	return out
}

func listOrNone(s []string) string {
	if len(s) == 0 {
		return "(none)"
	}
	return strings.Join(quoteAll(s), " ")
}
