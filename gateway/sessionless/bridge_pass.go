package sessionless

import (
	"context"
	"encoding/json"
	"errors"
	"maps"
	"slices"

	"github.com/gemgate/gemgate/auth"
	"github.com/gemgate/gemgate/gateway/wire"
	textclip "github.com/gemgate/gemgate/internal/clip"
	"github.com/gemgate/gemgate/jsonrpc"
	"github.com/gemgate/gemgate/pool"
)

// A sessionless worker answers its own input-required results, which reach the client untouched
// but for its requestState: sealed in one of gemgate's (state.go), a retry goes back only to the
// worker that asked, for the user it asked, and gets the worker's state back. A retry is a
// request like any other: authenticated, its headers checked, and decided by the policy again.

var (
	errStateTooLarge   = errors.New("the worker's requestState is too large to pass on")
	errStateAmbiguous  = errors.New("the worker's input-required result names resultType, requestState or inputRequests twice or in another case")
	errStateOtherGrant = errors.New("requestState names the worker of a token granting other scopes or audiences; retry with that token, or start the request again without it")
	errStateWorkerGone = errors.New("requestState names a worker that is no longer running (restarted or ended); start the request again without it")
)

// wrapInputRequired seals a sessionless worker's input-required result's requestState for the
// client, with the claims of base, the result's keys, the worker's state and an expiry. A result
// of another kind, or without a requestState, is returned as it is.
//
// The kind is read as the client reads it (resultTypeOf: a key in another case counts), and an
// input-required result that names resultType, requestState or inputRequests twice or in
// another case is refused: the client would take the variant, gemgate the exact key, and the
// worker's state would reach the client unwrapped.
func (a *Adapter) wrapInputRequired(base stateClaims, result json.RawMessage) (json.RawMessage, error) {
	if wire.IsObject(result) && resultTypeOf(result) != "input_required" {
		return result, nil // nearly every answer: not decoded, however large (MayHaveKey)
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(result, &fields); err != nil {
		return nil, err
	}
	if obj, err := jsonrpc.ReadObject(result, "result"); err != nil || obj.Exact("resultType", "requestState", "inputRequests") != nil {
		return nil, errStateAmbiguous
	}
	// One resultType, in its own case, which resultTypeOf read as input_required.
	raw, ok := fields["requestState"]
	if !ok {
		return result, nil
	}
	var ws string
	if err := json.Unmarshal(raw, &ws); err != nil {
		return nil, errors.New("the worker's requestState is not a string")
	}
	var inputs map[string]json.RawMessage
	if err := json.Unmarshal(fields["inputRequests"], &inputs); err != nil {
		return nil, errors.New("the worker's inputRequests is not an object")
	}
	c := base
	c.Keys, c.Pass, c.WorkerState = slices.Sorted(maps.Keys(inputs)), true, ws
	c.Expires = a.Now().Add(a.InputRequiredTimeout).Unix()
	state := a.key.seal(c)
	if len(state) > maxStateLen {
		return nil, errStateTooLarge
	}
	fields["requestState"], _ = json.Marshal(state)
	return json.Marshal(fields)
}

// openState verifies a client's requestState and that it belongs to this caller and request.
// A sessionless worker's state is retried at the worker of the retry's token's grant: a token
// granting less than the worker that answered is refused as the bridge's retry is (resume),
// and one granting other scopes or audiences names another worker, so it is refused before one
// is looked for (or started).
func (a *Adapter) openState(ctx context.Context, q *request, state string) (stateClaims, *wire.Error) {
	claims, err := a.key.open(state, a.Now())
	if err == nil {
		err = claims.belongsTo(q.p, q.access.ReadOnly, q.msg.Method, q.mr.Name)
	}
	if errors.Is(err, errStateReadWrite) {
		return claims, a.Steps.ReadOnlyAnswer(q.msg.ID, q.access)
	}
	if err != nil {
		return claims, refusal(q.msg, jsonrpc.CodeInvalidParams, err.Error())
	}
	if claims.Pass && !sameGrant(claims, q.p) {
		if he := a.Steps.GrantRefusalOf(claims.Scopes, claims.Audience, q.p, q.msg.ID,
			"a retry of "+textclip.Quote(q.msg.Method), a.requestLog(ctx, q.p, claims.Worker)); he != nil {
			return claims, he
		}
		return claims, refusal(q.msg, jsonrpc.CodeInvalidParams, errStateOtherGrant.Error())
	}
	return claims, nil
}

// sameGrant reports whether p's token has the grant of the worker a state names: the same
// sets of scopes and audiences (the pool's worker key: Member.Grant's lists, sorted, without
// repeats, nil when empty).
func sameGrant(c stateClaims, p auth.Principal) bool {
	return slices.Equal(pool.GrantList(p.Scopes), c.Scopes) && slices.Equal(pool.GrantList(p.Audience()), c.Audience)
}

// passInputRequired is a sessionless worker's answer on its way to the client: an
// input-required result gets its requestState wrapped, or is an error for the client (the
// worker's state is never handed out unbound). The outcome is "" when the answer's own.
func (a *Adapter) passInputRequired(pk *parked, resp *jsonrpc.Message) (*jsonrpc.Message, string) {
	// A pass state's retry reaches the worker of its own token's grant: the state binds the
	// grant (openState). A bridge retry is checked against the parked call's worker instead.
	base := pk.claims()
	base.Scopes, base.Audience, _ = pk.member.Grant()
	wrapped, err := a.wrapInputRequired(base, resp.Result)
	if err != nil {
		a.Log.Warn("a sessionless worker's input-required result could not be passed on", "worker", pk.member.WorkerID(), "error", err)
		return jsonrpc.ErrorResponse(resp.ID, jsonrpc.CodeInternalError, "the worker's answer could not be passed on: "+err.Error(), nil), "error"
	}
	out := *resp
	out.Result = wrapped
	if resultTypeOf(wrapped) == "input_required" {
		return &out, "input_required"
	}
	return &out, ""
}

// resultTypeOf is a result's resultType, "" when absent or unreadable.
func resultTypeOf(result json.RawMessage) string {
	if !wire.MayHaveKey(result, "resultType") {
		return ""
	}
	return wire.LastFoldedString(result) // as encoding/json reads it into a field
}
