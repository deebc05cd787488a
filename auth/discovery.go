package auth

import (
	"context"
	"errors"
	"fmt"

	"github.com/coreos/go-oidc/v3/oidc"
)

// discoverJWKSURL reads jwks_uri from the issuer's OpenID configuration.
// go-oidc also checks that the document names exactly this issuer.
func discoverJWKSURL(ctx context.Context, cfg Config) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, fetchTimeout)
	defer cancel()
	provider, err := oidc.NewProvider(oidc.ClientContext(ctx, cfg.HTTPClient), cfg.Issuer)
	if err != nil {
		return "", fmt.Errorf("auth: discovery for issuer %q: %w", cfg.Issuer, err)
	}
	var doc struct {
		JWKSURI string `json:"jwks_uri"`
	}
	if err := provider.Claims(&doc); err != nil {
		return "", fmt.Errorf("auth: discovery for issuer %q: %w", cfg.Issuer, err)
	}
	if doc.JWKSURI == "" {
		return "", fmt.Errorf("auth: discovery for issuer %q: %w", cfg.Issuer, errors.New("no jwks_uri"))
	}
	return doc.JWKSURI, nil
}
