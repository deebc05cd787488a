package devissuer

import (
	"crypto"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"
	"time"

	"github.com/lestrrat-go/jwx/v2/jwa"
	"github.com/lestrrat-go/jwx/v2/jwk"
	"github.com/lestrrat-go/jwx/v2/jws"
)

// signingKey is the issuer's RS256 key: made fresh on every Start, or kept in
// Options.KeyFile.
type signingKey struct {
	kid     string
	private *rsa.PrivateKey
	jwks    []byte // the public JWK Set served at /jwks
}

// loadSigningKey reads the key kept in file, or makes one and, when file is set, writes it
// there (mode 0600) for the next start. A kept key keeps its key id, so that tokens signed
// before a restart still name a known key.
func loadSigningKey(file string) (*signingKey, error) {
	if file == "" {
		return newSigningKey(nil)
	}
	b, err := os.ReadFile(file)
	if errors.Is(err, fs.ErrNotExist) {
		return newKeyFile(file)
	}
	if err != nil {
		return nil, fmt.Errorf("key file: %w", err)
	}
	blk, _ := pem.Decode(b)
	if blk == nil {
		return nil, fmt.Errorf("key file %s: no PEM block; delete it to make a new key", file)
	}
	k, err := x509.ParsePKCS8PrivateKey(blk.Bytes)
	priv, ok := k.(*rsa.PrivateKey)
	if err != nil || !ok || priv.N.BitLen() < 2048 {
		return nil, fmt.Errorf("key file %s: not an RSA-2048 PKCS#8 key; delete it to make a new key", file)
	}
	return newSigningKey(priv)
}

// newKeyFile makes a key and writes it to file, which must not exist yet: O_EXCL, so that two
// starts racing on a new data directory do not overwrite each other's key.
func newKeyFile(file string) (*signingKey, error) {
	key, err := newSigningKey(nil)
	if err != nil {
		return nil, err
	}
	der, err := x509.MarshalPKCS8PrivateKey(key.private)
	if err != nil {
		return nil, fmt.Errorf("encode RSA key: %w", err)
	}
	f, err := os.OpenFile(file, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err == nil {
		_, err = f.Write(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}))
		err = errors.Join(err, f.Close())
	}
	if err != nil {
		return nil, fmt.Errorf("key file: %w", err)
	}
	return key, nil
}

// newSigningKey wraps priv, or a fresh key when priv is nil. The key id is the RFC 7638
// thumbprint of the public key: stable for a kept key, different for every fresh one.
func newSigningKey(priv *rsa.PrivateKey) (*signingKey, error) {
	if priv == nil {
		var err error
		if priv, err = rsa.GenerateKey(rand.Reader, 2048); err != nil {
			return nil, fmt.Errorf("generate RSA key: %w", err)
		}
	}
	pub, err := jwk.FromRaw(&priv.PublicKey)
	if err != nil {
		return nil, fmt.Errorf("public JWK: %w", err)
	}
	thumb, err := pub.Thumbprint(crypto.SHA256)
	if err != nil {
		return nil, fmt.Errorf("public JWK thumbprint: %w", err)
	}
	kid := base64.RawURLEncoding.EncodeToString(thumb)[:16]
	for k, v := range map[string]any{jwk.KeyIDKey: kid, jwk.AlgorithmKey: jwa.RS256, jwk.KeyUsageKey: "sig"} {
		if err := pub.Set(k, v); err != nil {
			return nil, fmt.Errorf("public JWK %s: %w", k, err)
		}
	}
	doc, err := json.Marshal(map[string][]jwk.Key{"keys": {pub}})
	if err != nil {
		return nil, fmt.Errorf("JWK set: %w", err)
	}
	return &signingKey{kid: kid, private: priv, jwks: doc}, nil
}

// accessClaims are the claims of every access token this issuer mints. aud is a single
// string, as Keycloak does for a token with one audience.
type accessClaims struct {
	Issuer            string `json:"iss"`
	Subject           string `json:"sub"`
	PreferredUsername string `json:"preferred_username,omitempty"`
	Audience          string `json:"aud"`
	Scope             string `json:"scope,omitempty"`
	IssuedAt          int64  `json:"iat"`
	NotBefore         int64  `json:"nbf"`
	Expiry            int64  `json:"exp"`
	ID                string `json:"jti"`
	AuthorizedParty   string `json:"azp,omitempty"`
	ClientID          string `json:"client_id,omitempty"` // RFC 9068 §2.2
	Actor             *actor `json:"act,omitempty"`       // RFC 8693 §4.1, set by token exchange
}

// actor is the RFC 8693 `act` claim: who acts on behalf of the subject.
type actor struct {
	Subject string `json:"sub"`
	Actor   *actor `json:"act,omitempty"`
}

// sign completes c with iss, iat, nbf, exp and jti and signs it.
func (i *Issuer) sign(c accessClaims, ttl time.Duration) (string, error) {
	now := time.Now()
	c.Issuer = i.url
	c.IssuedAt = now.Unix()
	c.NotBefore = now.Unix()
	c.Expiry = now.Add(ttl).Unix()
	c.ID = randomHex(16)
	payload, err := json.Marshal(c)
	if err != nil {
		return "", fmt.Errorf("devissuer: claims: %w", err)
	}
	hdr := jws.NewHeaders()
	for k, v := range map[string]any{jws.KeyIDKey: i.key.kid, jws.TypeKey: "at+jwt"} {
		if err := hdr.Set(k, v); err != nil {
			return "", fmt.Errorf("devissuer: header %s: %w", k, err)
		}
	}
	tok, err := jws.Sign(payload, jws.WithKey(jwa.RS256, i.key.private, jws.WithProtectedHeaders(hdr)))
	if err != nil {
		return "", fmt.Errorf("devissuer: sign: %w", err)
	}
	return string(tok), nil
}

// errForeignToken is returned by verifyOwn for every token this issuer did not mint or
// that is no longer valid. It says nothing about the token itself.
var errForeignToken = errors.New("not a valid token of this issuer")

// verifyOwn checks that raw was signed by this issuer's current key, names this issuer,
// and is within its validity window, and returns its claims.
func (i *Issuer) verifyOwn(raw string) (accessClaims, error) {
	var c accessClaims
	payload, err := jws.Verify([]byte(strings.TrimSpace(raw)), jws.WithKey(jwa.RS256, &i.key.private.PublicKey))
	if err != nil {
		return c, errForeignToken
	}
	if err := json.Unmarshal(payload, &c); err != nil {
		return c, errForeignToken
	}
	now := time.Now().Unix()
	if c.Issuer != i.url || c.Subject == "" || now >= c.Expiry || now < c.NotBefore {
		return c, errForeignToken
	}
	return c, nil
}
