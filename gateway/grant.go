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

// A client never runs in a worker that holds more than its token grants. A worker is keyed
// on the scope set and audiences of the token that started it (pool.Key), so a new session
// or a 2026-07-28 request gets a worker of its own token's grant; but a legacy session stays
// with the worker of the token that opened it (or stepped it up), and a 2026-07-28 retry
// resumes the call where it was parked. A later token of the session, or a retry's token,
// that does not grant every scope (the write scope aside: a token without it is narrowed
// per request, narrowed.go) and every audience that worker was given is refused here, 403
// insufficient_scope naming the worker's scopes, before anything reaches the worker. A token
// that grants more than the worker holds is served: the worker holds less than its client.

// kindGrant is the error data kind of a grant refusal.
const kindGrant = "grant"

// grantRefusal refuses a request of session s whose token grants less than the session's
// worker was given; nil when it grants at least that, or the session has no worker any more
// (the request meets that on its own). what names the request in the log.
func (g *Gateway) grantRefusal(s *session, p auth.Principal, id json.RawMessage, what string) *wire.Error {
	return g.refuseNarrowerGrant(s.member, p, id, what, s.log)
}

func (g *Gateway) refuseNarrowerGrant(m *pool.Member, p auth.Principal, id json.RawMessage, what string, log *slog.Logger) *wire.Error {
	scopes, audience, ok := m.Grant()
	if !ok {
		return nil
	}
	lackScopes, lackAudience := grantShortfall(scopes, audience, p.Scopes, p.Audience(), g.opts.Policy.WriteScope())
	if len(lackScopes) == 0 && len(lackAudience) == 0 {
		return nil
	}
	if access := g.decide(p); len(access.Missing()) > 0 {
		// A token without the required scopes is refused as such, as postMessage refuses it.
		return g.insufficientScope(id, access, access.Missing(), "forbidden", "missing required scopes")
	}
	log.Warn("request refused: its token grants less than the worker serving it was given",
		"request", what, "missing_scopes", lackScopes, "missing_audiences", lackAudience, "worker_scopes", scopes)
	// The scopes to ask for: the worker's, and the write scope when this token has it (a
	// step-up of a read-only session), so that asking for them loses nothing the token had.
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

// grantShortfall is what a worker given scopes and audience holds that a token granting
// hasScopes and hasAudience does not; the write scope is not counted (a token without it is
// narrowed, not refused).
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

// grantMessage is the refusal's text, the same in both eras.
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
