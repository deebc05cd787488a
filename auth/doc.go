// Package auth makes gemgate an OAuth 2.1 resource server for the MCP endpoint.
//
// It verifies JWT access tokens against the issuer's published keys
// ([Verifier]), turns the verdict into RFC 6750 challenges and statuses
// ([Authenticator], [Challenge]) and serves RFC 9728 protected-resource
// metadata ([MetadataHandler]). The verified identity travels in the request
// context as a [Principal].
//
// What this package must never do:
//   - log, echo or return a token, an Authorization header or any part of them
//     (errors and error_description texts are fixed phrases and claim names);
//   - accept a token from anywhere but the Authorization header;
//   - trust keys named by the token itself (jwk, jku, x5u, x5c headers) or
//     symmetric and "none" algorithms;
//   - treat a session, a cache entry or an earlier request as proof of
//     identity: every request is verified, cache hits re-check expiry;
//   - let jwx or go-oidc types escape its exported API.
package auth
