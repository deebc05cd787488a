package sessionless

import (
	"errors"
	"log/slog"
	"net/http"
	"slices"

	textclip "github.com/gemgate/gemgate/internal/clip"
	"github.com/gemgate/gemgate/jsonrpc"
	"github.com/gemgate/gemgate/policy"
	"github.com/gemgate/gemgate/pool"
)

// requestStateIn reads params.requestState strictly; ok is false when absent. A case variant
// of requestState, inputResponses or task is refused: gemgate replaces or removes those keys,
// and a worker reading keys without regard to case would take a variant for the real one.
func requestStateIn(rp requestParams) (string, bool, error) {
	if !rp.Present {
		return "", false, nil
	}
	if err := rp.Object.Exact("requestState", "inputResponses", "task"); err != nil {
		return "", false, err
	}
	return rp.Object.String("requestState")
}

// resume takes a client's retry of a parked call, its state verified (openState): the worker's
// parked requests are answered with the client's inputResponses, and the call's answer (or its
// next input-required round) is written to this response. A key left unanswered is asked again.
func (a *Adapter) resume(w http.ResponseWriter, r *http.Request, q *request, claims stateClaims) error {
	msg, p, access := q.msg, q.p, q.access
	refuse := func(err error) error {
		return refusal(msg, jsonrpc.CodeInvalidParams, err.Error())
	}
	// Read before the parked call is taken: a retry that cannot be read leaves it parked, for
	// a retry that can to finish.
	responses, _, err := q.mr.Params.Object.Object("inputResponses")
	if err != nil {
		he := strictError(msg, err)
		a.Steps.AuditUnread(r, msg, p, he) // as check's refusals: the strict reader's
		return he
	}
	// The retry's token must grant what the parked call's worker was given; refused, the call
	// stays parked, for a retry with a token that does to finish.
	m := a.parks.memberOf(claims.Park)
	if m == nil {
		return refuse(errStateGone)
	}
	log := a.requestLog(r.Context(), p, m.WorkerID())
	if he := a.Steps.GrantRefusal(m, p, msg.ID, "a retry of "+textclip.Quote(msg.Method), log); he != nil {
		return he
	}
	// Its headers mirror its body, as every request's of the era (call).
	if msg.Method == "tools/call" {
		if he := a.paramHeaderRefusal(r, q, m); he != nil {
			return he
		}
	}
	o := ownerOf(p)
	pk := a.parks.take(claims.Park)
	if pk == nil {
		return refuse(errStateGone)
	}
	if pk.owner != o || access.ReadOnly && !pk.access.ReadOnly {
		// The MAC bound the owner, and belongsTo refused a read-only token a read-write call's
		// state: a mismatch is a bug, and the call is not handed over.
		abandon(pk, "the retry did not match the parked call")
		return refuse(errStateNotYours)
	}
	if pk.member.WorkerID() != claims.Worker {
		// The worker that asked ended (crashed, stopped) since: its questions went with it.
		abandon(pk, "the worker that asked is no longer running")
		return refuse(errStateWorkerGone)
	}
	// The policy decides on the retry again, with its token: the state binds the access mode,
	// not the scopes a rule may require. Refused, the call is abandoned.
	if msg.Method == "tools/call" {
		if he := a.Steps.ToolGate(r.Context(), pk.member, log, msg.ID, access, pk.name); he != nil {
			abandon(pk, "the retry was refused by the policy")
			return he
		}
	} else if he := a.Steps.Gate(r.Context(), pk.member, func() *slog.Logger { return log }, msg, access); he != nil {
		abandon(pk, "the retry was refused by the policy")
		return he
	}
	pk.call.Waiting(false) // answered, the worker may ask for more within the call
	// The retry is a request of its own: the call's progress from now on is reported under
	// its token, or not at all, its log lines by its level, and the worker's next questions
	// are put to it by its own declaration (Wait.Park).
	pk.progressToken = q.progressToken
	pk.call.SetProgressToken(q.progressToken)
	pk.caller.logLevel.Store(int32(pool.LogLevel(q.mr.LogLevel)))
	pk.declared = declaredCaps(q.mr.Caps)
	missing := a.answerInputs(pk, log, access, claims, responses)
	pk.msg = msg
	// The round trip's span was ended by the round that parked the call; the retry's wait is
	// audited, as a 2026-07-28 worker's own retry is: its outcome is the tool's, or
	// input_required when a question left unanswered parks the call again (Wait.Park, with any
	// the worker asks next, as in the first round).
	if !a.await(w, r, pk, nil, log, missing) {
		pk.member.Detach()
	}
	return nil
}

// answerInputs answers the parked call's questions that the state asked for with the client's
// inputResponses, audited on log, and returns those left unanswered.
func (a *Adapter) answerInputs(pk *parked, log *slog.Logger, access policy.Access, claims stateClaims,
	responses jsonrpc.Object) map[string]*jsonrpc.Message {
	missing := map[string]*jsonrpc.Message{}
	for key, req := range pk.requests {
		if !slices.Contains(claims.Keys, key) { // not asked for in this state
			continue
		}
		raw, ok := responses.Raw(key)
		if !ok || string(raw) == "null" {
			missing[key] = req
			continue
		}
		// Audited with the retry's access, which the state bound to the parked call's and the
		// pool checks against the worker's mode once more.
		info, err := pk.member.Answer(&jsonrpc.Message{ID: req.ID, Result: raw}, access.ReadOnly)
		switch {
		case errors.Is(err, pool.ErrNotEntitled):
			a.Steps.AuditAnswer(log, info, access.ReadOnly, "refused")
			pk.member.Decline(req.ID)
		case errors.Is(err, pool.ErrNoSuchRequest):
		case err != nil:
			a.Steps.AuditAnswer(log, info, access.ReadOnly, "answered")
			a.Log.Warn("could not pass an input response to the worker", "error", err)
		default:
			a.Steps.AuditAnswer(log, info, access.ReadOnly, "answered")
		}
	}
	return missing
}

// memberOf is the pool member of a parked call, without taking it; nil when it is not there.
func (t *parkTable) memberOf(id string) *pool.Member {
	t.mu.Lock()
	defer t.mu.Unlock()
	if p := t.calls[id]; p != nil {
		return p.member
	}
	return nil
}
