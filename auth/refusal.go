package auth

import (
	"fmt"
	"log/slog"
	"net/url"
	"strings"

	"github.com/gemgate/gemgate/internal/clip"
)

// withFacts is err, a refusal of tok, with what tok says about itself for the log: header
// parameters and claim values, each clipped, never the token or any encoded part of it.
func (v *Verifier) withFacts(tok *parsedJWS, err error) error {
	e, ok := err.(*refusalError)
	if !ok {
		return err
	}
	r := *e
	r.facts = nil
	if tok.kid != "" {
		r.facts = append(r.facts, slog.String("kid", clip.String(tok.kid, maxQuoted)))
	}
	r.facts = append(r.facts, slog.String("alg", tok.alg.String()))
	unknownKey := r.reason == ReasonUnknownKey
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
		if unknownKey || r.reason == ReasonSignature || r.reason == ReasonAlgorithm {
			r.facts = append(r.facts, slog.Bool("claims_unverified", true))
		}
		if unknownKey && iss != "" {
			r.hint = fmt.Sprintf("no key of the configured issuer has this kid; the token names issuer %q (a token of another issuer or realm?)", iss)
		}
	}
	if unknownKey {
		r.facts = append(r.facts, slog.Any("known_kids", v.keys.keyIDs()))
	}
	return &r
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
