package gateway

import (
	"errors"
	"github.com/gemgate/gemgate/gateway/sessionless"
	"github.com/gemgate/gemgate/gateway/wire"
	"net/http"

	"github.com/gemgate/gemgate/auth"
	"github.com/gemgate/gemgate/jsonrpc"
	"github.com/gemgate/gemgate/policy"
	"github.com/gemgate/gemgate/pool"
)

// requestStateOf reads params.requestState strictly; ok is false when absent. A case variant
// of requestState, inputResponses or task is refused: gemgate replaces or removes those
// keys before the worker sees the request, and a worker reading keys without regard to case
// would take a variant it let through for the real one.
func requestStateOf(msg *jsonrpc.Message) (string, bool, error) {
	if len(msg.Params) == 0 || string(msg.Params) == "null" {
		return "", false, nil
	}
	params, err := jsonrpc.ReadObject(msg.Params, "params")
	if err != nil {
		return "", false, err
	}
	return requestStateIn(sessionless.Params{Object: params, Present: true})
}

// requestStateIn is requestStateOf on params already read.
func requestStateIn(rp sessionless.Params) (string, bool, error) {
	if !rp.Present {
		return "", false, nil
	}
	if err := rp.Object.Exact("requestState", "inputResponses", "task"); err != nil {
		return "", false, err
	}
	return rp.Object.String("requestState")
}

// resumeSessionless takes a client's retry of a parked call, its state verified and bound to this
// caller and request (openState): the worker's parked requests are answered with the client's
// inputResponses, and the original call's answer (or its next input-required round) is
// written to this response. A key left unanswered is asked for again.
func (g *Gateway) resumeSessionless(w http.ResponseWriter, r *http.Request, msg *jsonrpc.Message, p auth.Principal, access policy.Access, claims sessionless.Claims) error {
	refuse := func(err error) error {
		return sessionless.Refusal(msg, http.StatusBadRequest, jsonrpc.CodeInvalidParams, err.Error(), nil)
	}
	if he := g.parkedGrantRefusal(msg, p, claims); he != nil {
		return he
	}
	o := ownerOf(p)
	pk := g.parks.take(claims.Park)
	if pk == nil {
		return refuse(sessionless.ErrStateGone)
	}
	if pk.owner != o || pk.access.ReadOnly != access.ReadOnly || pk.member.WorkerID() != claims.Worker {
		// The MAC already bound these; a mismatch is a bug, and the call is not handed over.
		abandon(pk, "the retry did not match the parked call")
		return refuse(sessionless.ErrStateNotYours)
	}
	// The retry is a request like any other: the policy decides on it again, with the
	// retry's token. The state binds the access mode, not the scopes a rule may require; a
	// token without them must not finish a call that needs them. The call is abandoned: the
	// worker's requests get an error and the call ends.
	if msg.Method == "tools/call" {
		tc := toolCall{member: pk.member, log: g.sessionlessLog(p, pk.member.WorkerID()), id: msg.ID, access: access, name: pk.name, sessionless: true}
		if he := g.toolGate(r.Context(), tc); he != nil {
			abandon(pk, "the retry was refused by the policy")
			return he
		}
	}
	params, err := jsonrpc.ReadObject(msg.Params, "params")
	if err != nil {
		return sessionless.StrictError(msg, err)
	}
	responses, _, err := params.Object("inputResponses")
	if err != nil {
		return sessionless.StrictError(msg, err)
	}
	missing := g.answerInputs(pk, p, access, claims, responses)
	pk.msg = msg
	detach := true
	defer func() {
		if detach {
			pk.member.Detach()
		}
	}()
	if len(missing) > 0 {
		pk.requests = missing
		result, err := g.park(pk)
		if err != nil {
			for _, req := range missing {
				pk.member.Refuse(req.ID, err.Error())
			}
			return refuse(err)
		}
		detach = false
		wire.WriteBody(w, http.StatusOK, (&jsonrpc.Message{ID: msg.ID, Result: result}).Encode())
		return nil
	}
	_, parkedNow := g.awaitSessionless(w, r, pk)
	detach = !parkedNow
	return nil
}

// answerInputs answers the parked call's questions that the state asked for with the client's
// inputResponses, and returns those left unanswered.
func (g *Gateway) answerInputs(pk *parked, p auth.Principal, access policy.Access, claims sessionless.Claims,
	responses jsonrpc.Object) map[string]*jsonrpc.Message {
	missing := map[string]*jsonrpc.Message{}
	for key, req := range pk.requests {
		if !claims.HasKey(key) {
			continue
		}
		raw, ok := responses.Raw(key)
		if !ok || string(raw) == "null" {
			missing[key] = req
			continue
		}
		// Who answered is audited, with the retry's access (which the state bound to the
		// parked call's, and the pool checks against the worker's mode once more).
		info, err := pk.member.Answer(&jsonrpc.Message{ID: req.ID, Result: raw}, access.ReadOnly)
		alog := g.log.With("user", p.User, "worker", pk.member.WorkerID(), "era", sessionless.Version)
		switch {
		case errors.Is(err, pool.ErrNotEntitled):
			auditAnswer(alog, info, access.ReadOnly, "refused")
			pk.member.Decline(req.ID)
		case errors.Is(err, pool.ErrNoSuchRequest):
		case err != nil:
			auditAnswer(alog, info, access.ReadOnly, "answered")
			g.log.Warn("could not pass an input response to the worker", "error", err)
		default:
			auditAnswer(alog, info, access.ReadOnly, "answered")
		}
	}
	return missing
}
