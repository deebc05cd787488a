// Package test holds gemgate's end-to-end tests: the real gemgate binary, real worker
// processes and real MCP clients (the official Go SDK client here; the TypeScript SDK and
// the MCP Inspector from test/node). Tests that need an outside service (Keycloak) find it
// through the environment that .ci/run sets, and say so when it is missing.
package test
