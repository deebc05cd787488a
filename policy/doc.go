// Package policy decides what a caller of gemgate may do with the MCP tools behind it.
//
// It turns the scopes of a verified token into an [Access] (which required scopes are
// missing, whether the session is read-only, which scopes unlock rule-gated tools), answers
// whether one tool may be called ([Policy.CheckTool]), and removes the tools an Access may
// not call from a tools/list result ([Policy.FilterToolsList]). It also derives the scopes
// gemgate advertises ([Policy.ScopesSupported]).
//
// Read-only is fail-closed: in a read-only session a tool is visible and callable only if
// the operator vouched for it (ReadOnlyTools) or, when the operator opted in with
// TrustReadOnlyHints, the worker annotated it readOnlyHint: true. A tool nobody vouched
// for is hidden and refused.
//
// The package is pure: no I/O, no logging, no clocks, and it imports nothing else of
// gemgate's. It must never loosen a decision on malformed input (it returns an error and
// the caller refuses), never treat an Access it did not make as read-write, and never
// advertise offline_access unless the operator listed it among the extra scopes.
package policy
