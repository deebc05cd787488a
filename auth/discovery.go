package auth

import (
	"context"
	"errors"
	"fmt"
	"net/http"

	"github.com/coreos/go-oidc/v3/oidc"
)

// discover reads the issuer's OpenID configuration. go-oidc also checks that the document
// names exactly this issuer.
func discover(ctx context.Context, client *http.Client, issuer string) (*oidc.Provider, error) {
	ctx, cancel := context.WithTimeout(ctx, fetchTimeout)
	defer cancel()
	provider, err := oidc.NewProvider(oidc.ClientContext(ctx, client), issuer)
	if err != nil {
		return nil, fmt.Errorf("auth: discovery for issuer %q: %w", issuer, err)
	}
	return provider, nil
}

// discoverJWKSURL reads jwks_uri from the issuer's OpenID configuration.
func discoverJWKSURL(ctx context.Context, client *http.Client, issuer string) (string, error) {
	provider, err := discover(ctx, client, issuer)
	if err != nil {
		return "", err
	}
	var doc struct {
		JWKSURI string `json:"jwks_uri"`
	}
	if err := provider.Claims(&doc); err != nil {
		return "", fmt.Errorf("auth: discovery for issuer %q: %w", issuer, err)
	}
	if doc.JWKSURI == "" {
		return "", fmt.Errorf("auth: discovery for issuer %q: %w", issuer, errors.New("no jwks_uri"))
	}
	return doc.JWKSURI, nil
}

// TokenEndpoint reads the issuer's token endpoint from its OpenID configuration (for a token
// exchange). A nil client means http.DefaultClient.
func TokenEndpoint(ctx context.Context, client *http.Client, issuer string) (string, error) {
	provider, err := discover(ctx, client, issuer)
	if err != nil {
		return "", err
	}
	if u := provider.Endpoint().TokenURL; u != "" {
		return u, nil
	}
	return "", fmt.Errorf("auth: discovery for issuer %q: %w", issuer, errors.New("no token_endpoint"))
}
