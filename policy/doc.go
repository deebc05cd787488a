// Package policy decides what a caller of gemgate may do with the MCP tools behind it.
//
// It turns a verified token into an [Access] (which required scopes are missing, whether the
// session is read-only, and what rules may read of the token: its subject, user, groups,
// roles and claims), answers whether one tool may be called and what decided it
// ([Policy.CheckTool], [Policy.ExplainKind]), and removes the tools an Access may not call from
// a tools/list result ([Policy.FilterList]), saying in its _meta why when it removes
// them all. It also derives the scopes gemgate advertises ([Policy.ScopesSupported]).
//
// Read-only is fail-closed and decided first: in a read-only session a tool is visible and
// callable only if the operator vouched for it (ReadOnlyTools) or, when the operator opted
// in with TrustReadOnlyHints, the worker annotated it readOnlyHint: true. A tool nobody
// vouched for is hidden and refused. Operator-written [Rule]s (a scope, a CEL expression, or
// both) then restrict tools further; every rule that applies must pass, so a rule can only
// take away, never lift the read-only gate. Rules are compiled and type-checked in [New]; an
// evaluation that fails denies, and each is bounded in cost.
//
// Prompt and resource rules ([Config].PromptRules, ResourceRules) restrict a worker's prompts
// (by name) and resources (by URI) the same way ([Policy.ExplainKind], [Policy.FilterList] on
// prompts/list, resources/list and resources/templates/list). They have no read-only gate:
// reading a prompt or a resource is not a change, so a read-only access keeps every one that
// no rule takes away.
//
// The package does no I/O, no logging and reads no clock, and it imports nothing else of
// gemgate's. It must never loosen a decision on malformed input (it returns an error and the
// caller refuses), never treat an Access it did not make as read-write, never advertise
// offline_access unless the operator listed it among the extra scopes, and never put a
// claim's value in an error or a reason.
package policy
