package gateway

import (
	"encoding/json"
	"log/slog"
	"slices"
	"strings"

	"github.com/gemgate/gemgate/auth"
	"github.com/gemgate/gemgate/gateway/wire"
	"github.com/gemgate/gemgate/pool"
)

// A client never runs in a worker that holds more than its token grants. A session stays on
// its worker, and a 2026-07-28 retry resumes its parked call: a later token lacking a scope
// (write aside: narrowed.go) or audience that worker was given is refused, 403.

const kindGrant = "grant" // the error data kind of a grant refusal

// grantRefusal refuses a request whose token grants less than m's worker was given.
func (g *Gateway) grantRefusal(m *pool.Member, p auth.Principal, id json.RawMessage, what string, log *slog.Logger) *wire.Error {
	scopes, audience, ok := m.Grant()
	if !ok {
		return nil
	}
	return g.grantRefusalOf(scopes, audience, p, id, what, log)
}

// grantRefusalOf refuses a request whose token grants less than a worker given scopes and
// audience (Member.Grant's) was.
func (g *Gateway) grantRefusalOf(scopes, audience []string, p auth.Principal, id json.RawMessage, what string, log *slog.Logger) *wire.Error {
	lackScopes, lackAudience := grantShortfall(scopes, audience, p.Scopes, p.Audience(), g.opts.Policy.WriteScope())
	if len(lackScopes) == 0 && len(lackAudience) == 0 {
		return nil
	}
	if access := g.decide(p); len(access.Missing()) > 0 {
		// Refused as postMessage refuses it.
		return g.insufficientScope(id, access, access.Missing(), "forbidden", "missing required scopes")
	}
	log.Warn("request refused: its token grants less than the worker serving it was given",
		"request", what, "missing_scopes", lackScopes, "missing_audiences", lackAudience, "worker_scopes", scopes)
	// Ask for the worker's scopes, and the write scope if this token has it, losing nothing.
	needed := slices.Clone(scopes)
	if write := g.opts.Policy.WriteScope(); write != "" && slices.Contains(p.Scopes, write) && !slices.Contains(needed, write) {
		needed = append(needed, write)
		slices.Sort(needed)
	}
	he := g.insufficientScope(id, g.decide(p), needed, kindGrant, grantMessage(needed, audience))
	he.Data = map[string]any{"kind": kindGrant, "scopes": scopes, "audiences": audience,
		"missing_scopes": lackScopes, "missing_audiences": lackAudience}
	return he
}

// grantShortfall is what the worker holds that the token does not, the write scope aside.
func grantShortfall(scopes, audience, hasScopes, hasAudience []string, write string) (lackScopes, lackAudience []string) {
	for _, s := range scopes {
		if s != write && !slices.Contains(hasScopes, s) {
			lackScopes = append(lackScopes, s)
		}
	}
	for _, a := range audience {
		if !slices.Contains(hasAudience, a) {
			lackAudience = append(lackAudience, a)
		}
	}
	return lackScopes, lackAudience
}

func grantMessage(scopes, audience []string) string {
	var b strings.Builder
	b.WriteString("this token grants less than the token the worker serving this request was started with, " +
		"and a client never runs in a worker that holds more than its token grants: retry with a token granting the scopes ")
	b.WriteString(strings.Join(scopes, " "))
	if len(audience) > 0 {
		b.WriteString(" for the audiences ")
		b.WriteString(strings.Join(audience, " "))
	}
	b.WriteString(", or start over with this token (open a new session; for a 2026-07-28 call, send it again without its requestState)")
	return b.String()
}
