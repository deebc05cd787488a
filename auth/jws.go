package auth

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rsa"
	"encoding/base64"
	"strings"

	"github.com/lestrrat-go/jwx/v2/jwa"
	"github.com/lestrrat-go/jwx/v2/jws"
)

// acceptedAlgorithms are the asymmetric JWS algorithms gemgate verifies. HS* and "none" are
// absent on purpose: with a public JWKS an HMAC "key" is public knowledge.
var acceptedAlgorithms = map[jwa.SignatureAlgorithm]bool{
	jwa.RS256: true, jwa.RS384: true, jwa.RS512: true,
	jwa.PS256: true, jwa.PS384: true, jwa.PS512: true,
	jwa.ES256: true, jwa.ES384: true, jwa.ES512: true,
	jwa.EdDSA: true,
}

// forbiddenHeaders name keys or semantics chosen by the token itself: refused before a key is
// looked up. cty announces a nested token; gemgate's claims are the signed payload itself.
var forbiddenHeaders = []string{
	jws.JWKKey, jws.JWKSetURLKey, jws.X509URLKey, jws.X509CertChainKey, jws.CriticalKey, "b64",
	jws.ContentTypeKey,
}

// parsedJWS is a compact JWS whose header passed the checks above.
type parsedJWS struct {
	alg          jwa.SignatureAlgorithm
	kid          string
	signingInput string
	signature    []byte
	payload      []byte
}

func parseJWS(raw string) (*parsedJWS, error) {
	// Compact serialization only: a JWE has five parts, the JSON serialization none.
	if strings.Count(raw, ".") != 2 {
		return nil, malformedError("not a compact JWS")
	}
	// One token, one spelling: each part base64url without padding (RFC 7515 §2), its unused
	// bits zero. jwx also reads padding, the standard alphabet and stray bits: one signed token
	// would verify under many texts, and anything keyed on the text (the cache, a revocation
	// list) would see several tokens.
	for part := range strings.SplitSeq(raw, ".") {
		if _, err := base64.RawURLEncoding.Strict().DecodeString(part); err != nil || strings.ContainsAny(part, "\r\n") {
			return nil, malformedError("a part is not base64url without padding")
		}
	}
	msg, err := jws.Parse([]byte(raw), jws.WithCompact())
	if err != nil {
		return nil, malformedError("unparsable JWS")
	}
	sigs := msg.Signatures()
	if len(sigs) != 1 {
		return nil, malformedError("not exactly one signature")
	}
	h := sigs[0].ProtectedHeaders()
	alg := h.Algorithm()
	if !acceptedAlgorithms[alg] {
		return nil, algorithmError(alg.String())
	}
	for _, name := range forbiddenHeaders {
		if _, ok := h.Get(name); ok {
			return nil, headerError(name)
		}
	}
	if !accessTokenType(h.Type()) {
		return nil, malformedError("its typ names a kind of JWT that is not an access token")
	}
	payload := bytes.TrimLeft(msg.Payload(), " \t\r\n")
	if len(payload) == 0 || payload[0] != '{' {
		return nil, malformedError("payload is not a JSON object")
	}
	return &parsedJWS{
		alg:          alg,
		kid:          h.KeyID(),
		signingInput: raw[:strings.LastIndexByte(raw, '.')],
		signature:    sigs[0].Signature(),
		payload:      payload,
	}, nil
}

// verifySignature checks the signature over the exact bytes received.
func (t *parsedJWS) verifySignature(pk PublicKey) error {
	if (pk.Algorithm != "" && pk.Algorithm != t.alg.String()) || !algorithmFitsKey(t.alg, pk) {
		return algorithmError(t.alg.String())
	}
	verifier, err := jws.NewVerifier(t.alg)
	if err != nil {
		return algorithmError(t.alg.String())
	}
	if err := verifier.Verify([]byte(t.signingInput), t.signature, pk.Key); err != nil {
		return signatureError(err)
	}
	return nil
}

var ecCurves = map[jwa.SignatureAlgorithm]elliptic.Curve{
	jwa.ES256: elliptic.P256(), jwa.ES384: elliptic.P384(), jwa.ES512: elliptic.P521(),
}

// algorithmFitsKey refuses, for example, ES256 over a P-384 key or RS256 over an EC key.
func algorithmFitsKey(alg jwa.SignatureAlgorithm, pk PublicKey) bool {
	switch k := pk.Key.(type) {
	case *rsa.PublicKey:
		switch alg {
		case jwa.RS256, jwa.RS384, jwa.RS512, jwa.PS256, jwa.PS384, jwa.PS512:
			return true
		}
	case *ecdsa.PublicKey:
		curve, ok := ecCurves[alg]
		return ok && k.Curve == curve
	case ed25519.PublicKey:
		return alg == jwa.EdDSA
	}
	return false
}

// accessTokenType reports whether a JWS header's typ may be an access token's: absent, "JWT",
// "JOSE" or RFC 9068's "at+jwt", but no other "+jwt" kind (a DPoP proof, a logout token)
// signed by the same keys. typ is a media type (RFC 7515 §4.1.9): any case, "application/"
// optional, parameters and white space aside.
func accessTokenType(typ string) bool {
	t, _, _ := strings.Cut(strings.ToLower(typ), ";")
	t = strings.TrimPrefix(strings.Trim(t, " \t"), "application/")
	return !strings.HasSuffix(t, "+jwt") || t == "at+jwt"
}
