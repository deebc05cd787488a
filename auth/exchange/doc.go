// Package exchange obtains worker credentials by OAuth 2.0 Token Exchange (RFC 8693):
// the gateway presents the user's verified access token as subject_token to the
// issuer's token endpoint, authenticated as itself, and receives a separate token for
// the user aimed at the backend (audience, e.g. "gemstone"). The worker gets that
// token, never the client's own token, as the MCP specification requires.
//
// What it must never do: put the subject token or an issued token in an error, a log
// line or a printed value ([Credential] prints without its token), nor the client secret
// in an error; send the client credentials or the subject token anywhere but the configured
// token endpoint (a redirect of the exchange is never followed); wait for the issuer
// without bound.
package exchange
