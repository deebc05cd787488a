package auth

import (
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"strings"
	"time"

	"github.com/gemgate/gemgate/internal/clip"
)

// refusal wraps a verification failure, whose text it keeps, with what the token said about
// itself for the log: header parameters and claim values, each clipped, never the token or
// any encoded part of it.
type refusal struct {
	err   error
	facts []slog.Attr
	hint  string // for an unknown kid of a token that names an issuer
}

func (r *refusal) Error() string { return r.err.Error() }
func (r *refusal) Unwrap() error { return r.err }

// withFacts wraps err with what tok says about itself.
func (v *Verifier) withFacts(tok *parsedJWS, err error) error {
	r := &refusal{err: err}
	if tok.kid != "" {
		r.facts = append(r.facts, slog.String("kid", clip.String(tok.kid, maxQuoted)))
	}
	r.facts = append(r.facts, slog.String("alg", tok.alg.String()))
	unknownKey := errAs[*UnknownKeyError](err)
	if cs, perr := parseClaimSet(tok.payload); perr == nil {
		iss, _, _ := cs.str(claimIssuer)
		iss = clip.String(iss, maxQuoted)
		aud, _ := cs.strings(claimAudience, false)
		var shownAud []string
		for _, a := range aud[:min(len(aud), 8)] {
			shownAud = append(shownAud, clip.String(a, maxQuoted))
		}
		if len(aud) > 8 {
			shownAud = append(shownAud, "…")
		}
		r.facts = append(r.facts, slog.String("iss", iss), slog.Any("aud", shownAud))
		if azp, _, _ := cs.str(claimAuthorizedParty); azp != "" {
			r.facts = append(r.facts, slog.String("azp", clip.String(azp, maxQuoted)))
		}
		// The claims of a payload whose signature did not verify.
		if unknownKey || errAs[*SignatureError](err) || errAs[*AlgorithmError](err) {
			r.facts = append(r.facts, slog.Bool("claims_unverified", true))
		}
		if unknownKey && iss != "" {
			r.hint = fmt.Sprintf("no key of the configured issuer has this kid; the token names issuer %q (a token of another issuer or realm?)", iss)
		}
	}
	if unknownKey {
		r.facts = append(r.facts, slog.Any("known_kids", v.keys.keyIDs()))
	}
	return r
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
	var r *refusal
	if errors.As(err, &r) {
		attrs = append(attrs, r.facts...)
	}
	more, hint := errorFacts(err, r != nil)
	attrs = append(attrs, more...)
	if hint != "" {
		attrs = append(attrs, slog.String("hint", hint))
	}
	return attrs
}

// errorFacts are the log attributes of err's typed error, and the usual cause of the refusal
// when it is recognisable. haveFacts: the token's own iss and aud are logged already.
func errorFacts(err error, haveFacts bool) (attrs []slog.Attr, hint string) {
	var (
		iss *InvalidIssuerError
		aud *InvalidAudienceError
		exp *TokenExpiredError
		nyv *NotYetValidError
		ce  *ClaimError
		alg *AlgorithmError
		hdr *ForbiddenHeaderError
		mal *MalformedTokenError
		scp *InsufficientScopeError
		un  *UserNameError
		ut  *UserTakenError
		sn  *SubjectNamesError
		uf  *UserNamesFullError
		r   *refusal
	)
	switch {
	case errors.As(err, &scp):
		return []slog.Attr{slog.Any("missing_scopes", scp.Missing)}, ""
	case errors.As(err, &un):
		return []slog.Attr{slog.String("claim", un.Claim), slog.String("user", un.User), slog.String("problem", un.Err.Error())}, ""
	case errors.As(err, &ut):
		return []slog.Attr{slog.String("claim", ut.Claim), slog.String("user", ut.User),
				slog.String("subject", ut.Subject), slog.String("bound_subject", ut.BoundTo)},
			"two subjects of the issuer carry one user name; workers act as the name, so only the first is served. Use a user_claim the identity provider never lets users change or reuse (sub; on Keycloak, preferred_username with Edit username off)"
	case errors.As(err, &sn):
		return []slog.Attr{slog.String("claim", sn.Claim), slog.String("user", sn.User),
				slog.String("subject", sn.Subject), slog.Int("max_names_per_subject", sn.Max)},
			"one subject carries ever new user names (an account renamed again and again); each is bound to it until gemgate restarts, so past a few new ones are refused. Use a user_claim the identity provider never lets users change or reuse (sub; on Keycloak, preferred_username with Edit username off)"
	case errors.As(err, &uf):
		return []slog.Attr{slog.Int("max_user_names", uf.Max)}, ""
	case errors.As(err, &iss):
		hint = issuerHint(iss.Issuer, iss.Expected)
		if haveFacts {
			return []slog.Attr{slog.String("expected_iss", iss.Expected)}, hint
		}
		return []slog.Attr{slog.String("iss", clip.String(iss.Issuer, maxQuoted)), slog.String("expected_iss", iss.Expected)}, hint
	case errors.As(err, &aud):
		hint = fmt.Sprintf("the token's aud must contain %q (gemgate's public MCP URL, public_url) or a value of the audiences setting", firstOr(aud.Expected))
		if aud.AuthorizedParty != "" {
			hint += fmt.Sprintf("; on Keycloak, give client %q an audience mapper (or client scope) that adds it", aud.AuthorizedParty)
		}
		if haveFacts {
			return []slog.Attr{slog.Any("expected_aud", aud.Expected)}, hint
		}
		return []slog.Attr{slog.Any("aud", aud.Audience), slog.Any("expected_aud", aud.Expected)}, hint
	case errors.As(err, &exp):
		if ago := exp.Now.Sub(exp.Expiry); ago < 5*time.Minute && ago > 0 {
			hint = "the token expired moments ago: the client should refresh it; if fresh tokens fail too, gemgate's clock is ahead of the issuer's"
		}
		return []slog.Attr{slog.Time("exp", exp.Expiry), slog.Time("now", exp.Now),
			slog.Duration("expired_for", exp.Now.Sub(exp.Expiry).Truncate(time.Second)), slog.Duration("allowed_skew", exp.Skew)}, hint
	case errors.As(err, &nyv):
		return []slog.Attr{slog.Time(nyv.Claim, nyv.At), slog.Time("now", nyv.Now),
				slog.Duration("clock_skew", nyv.At.Sub(nyv.Now).Truncate(time.Second)), slog.Duration("allowed_skew", nyv.Skew)},
			"the issuer's clock is ahead of gemgate's: synchronise both clocks (NTP)"
	case errors.As(err, &ce):
		return []slog.Attr{slog.String("claim", clip.String(ce.Claim, maxQuoted)), slog.String("problem", ce.Reason)}, ""
	case errors.As(err, &alg):
		return []slog.Attr{slog.String("token_alg", clip.String(alg.Algorithm, maxQuoted))}, ""
	case errors.As(err, &hdr):
		return []slog.Attr{slog.String("header", hdr.Header)}, ""
	case errors.As(err, &mal):
		return []slog.Attr{slog.String("problem", mal.Reason)}, ""
	case errors.As(err, &r):
		return nil, r.hint
	}
	return nil, ""
}

// issuerHint recognises the split-horizon mistake: the client reached the issuer as
// http://localhost:8080/realms/x, gemgate as http://keycloak:8080/realms/x, and Keycloak puts
// the URL it was reached by into iss.
func issuerHint(got, want string) string {
	g, err1 := url.Parse(got)
	w, err2 := url.Parse(want)
	if err1 != nil || err2 != nil || g.Host == "" || w.Host == "" {
		return ""
	}
	samePath := strings.TrimSuffix(g.Path, "/") == strings.TrimSuffix(w.Path, "/")
	switch {
	case samePath && !strings.EqualFold(g.Host, w.Host):
		return fmt.Sprintf("same issuer path under another host (%s vs %s): clients and gemgate reach the identity provider by different URLs, and it names the one each used. Give it one public hostname (Keycloak: KC_HOSTNAME) that both use, or set issuer to the URL clients see", g.Host, w.Host)
	case samePath && g.Scheme != w.Scheme:
		return "same issuer under another scheme (http vs https): set the identity provider's public URL (Keycloak: KC_HOSTNAME with https, or proxy headers) or the issuer setting to match"
	case samePath:
		return "the issuers differ only by a trailing slash: iss must equal the issuer setting exactly"
	case strings.EqualFold(g.Host, w.Host) && strings.Contains(g.Path, "/realms/") && strings.Contains(w.Path, "/realms/"):
		return "a token of another Keycloak realm"
	}
	return ""
}

func firstOr(s []string) string {
	if len(s) == 0 {
		return ""
	}
	return s[0]
}
