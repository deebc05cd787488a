// Package devissuer is a small OAuth 2.0 authorization server inside the gemgate process,
// for `gemgate dev` and for tests without Keycloak.
//
// It serves:
//   - OIDC discovery and RFC 8414 metadata at /.well-known/openid-configuration and
//     /.well-known/oauth-authorization-server (the same document; Content-Type
//     application/json; issuer equal to [Issuer.URL]);
//   - its public signing key at /jwks;
//   - a token endpoint at /token with the client_credentials grant (RFC 6749 §4.4,
//     RFC 8707 resource indicator) and the token-exchange grant (RFC 8693).
//
// The authorization endpoint is NOT implemented: /authorize only explains. It is in the
// metadata because OIDC Discovery requires it, and so is S256 because MCP clients refuse a
// server without PKCE, even for client_credentials.
//
// Access tokens are RS256 JWTs signed with an RSA-2048 key whose key id is its RFC 7638
// thumbprint.
//
// What it must never do: listen on anything but a loopback address; be used as a real
// identity provider (secrets live in memory and are printed by `gemgate dev`); log a
// token, a client secret or an Authorization header.
package devissuer
