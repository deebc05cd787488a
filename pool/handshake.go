package pool

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strconv"

	"github.com/gemgate/gemgate/internal/clip"
	"github.com/gemgate/gemgate/jsonrpc"
	"github.com/gemgate/gemgate/worker"
)

// ownParams are gemgate's initialize params as the worker's own MCP client (worker_per:
// user). Sampling and elicitation are declared: they are asked within a call, and go to that
// call's client. Roots are not: they belong to one client, while the worker serves all the
// user's clients and asks for roots outside any call. Told nothing, such a worker keeps the
// directories it was started with.
func (p *Pool) ownParams() json.RawMessage {
	b, _ := json.Marshal(map[string]any{
		"protocolVersion": p.opts.Versions[0],
		"capabilities": map[string]any{
			"sampling": map[string]any{}, "elicitation": map[string]any{},
		},
		"clientInfo": clientInfo,
	})
	return b
}

// handshake is the MCP handshake with a fresh worker: initialize with params, and
// notifications/initialized unless the client sends its own (a first start with worker_per:
// session). It returns the InitializeResult and the version the worker chose.
func (p *Pool) handshake(ctx context.Context, proc *worker.Process, params json.RawMessage, sendInitialized bool) (json.RawMessage, string, error) {
	resp, err := p.openingCall(ctx, proc, "gemgate-init", "initialize", params)
	if err != nil {
		return nil, "", err
	}
	if resp.Error != nil {
		return nil, "", &RefusedError{Answer: refusal(proc, resp.Error)}
	}
	version, err := protocolVersion(resp.Result)
	if err == nil && !slices.Contains(p.opts.Versions, version) {
		err = errors.New("the worker chose protocol version " + strconv.Quote(clip.Bytes(proc.Redacted([]byte(version)), 100)) + ", which the gateway does not speak")
	}
	if err != nil {
		return nil, "", &StartError{Err: err}
	}
	if sendInitialized {
		if err := proc.Write(ctx, &jsonrpc.Message{Method: "notifications/initialized"}); err != nil {
			return nil, "", &StartError{Exited: true, Err: err}
		}
	}
	return resp.Result, version, nil
}

// refusal is a worker's error answer to its opening call as the client may read it: with the
// credential taken out (a refused login may quote it), or gemgate's own error if nothing
// usable is left.
func refusal(proc *worker.Process, answer json.RawMessage) json.RawMessage {
	out := proc.Redacted(answer)
	if bytes.Equal(out, answer) {
		return answer
	}
	var e struct {
		Code    *int64 `json:"code"`
		Message string `json:"message"`
	}
	if json.Unmarshal(out, &e) != nil || e.Code == nil {
		return json.RawMessage(`{"code":-32603,"message":"the worker refused initialize (its answer quoted its credential and is not passed on)"}`)
	}
	return out
}

// protocolVersion is the protocolVersion of initialize params or an InitializeResult.
func protocolVersion(b json.RawMessage) (string, error) {
	var v struct {
		ProtocolVersion string `json:"protocolVersion"`
	}
	err := json.Unmarshal(b, &v)
	return v.ProtocolVersion, err
}

// resultFor is the worker's InitializeResult as one session sees it (worker_per: user): the
// session's own protocol version when gemgate and the worker both speak it (gemgate serves
// it, and it is not later than the one the worker agreed with gemgate: a worker speaks the
// revisions before its own), else the one the worker agreed.
func (p *Pool) resultFor(w *wrk, clientParams json.RawMessage) json.RawMessage {
	asked, _ := protocolVersion(clientParams)
	v := w.version
	// Versions are latest first: a later index is an earlier revision.
	if i := slices.Index(p.opts.Versions, asked); i >= 0 && i > slices.Index(p.opts.Versions, w.version) {
		v = asked
	}
	if v == w.version {
		return w.initResult
	}
	version, _ := json.Marshal(v)
	if out, err := withField(w.initResult, "protocolVersion", version); err == nil {
		return out
	}
	return w.initResult
}

// ExitedUnasked reports whether an error answer is the worker package's note that the worker
// exited before answering, rather than an answer the worker gave.
func ExitedUnasked(resp *jsonrpc.Message) bool {
	var e struct {
		Data struct {
			Kind string `json:"kind"`
		} `json:"data"`
	}
	return json.Unmarshal(resp.Error, &e) == nil && e.Data.Kind == "workerExit"
}

// openingCall sends the request that opens a fresh worker's session (initialize, or a
// sessionless server/discover) and waits for its answer, within init_timeout. A worker that
// exited before answering is a StartError.
func (p *Pool) openingCall(ctx context.Context, proc *worker.Process, id, method string, params json.RawMessage) (*jsonrpc.Message, error) {
	call, err := proc.Send(ctx, &jsonrpc.Message{ID: json.RawMessage(strconv.Quote(id)), Method: method, Params: params}, nil)
	if err != nil {
		return nil, &StartError{Exited: true, Err: err}
	}
	ctx, cancel := context.WithTimeoutCause(ctx, p.opts.InitTimeout, ErrInitTimeout)
	defer cancel()
	select {
	case resp := <-call.Result():
		if resp.Error != nil && ExitedUnasked(resp) {
			// The text as gemgate logs it, without the credential and clipped; never taken as
			// gemgate's own text, since a worker can forge ExitedUnasked's.
			return nil, &StartError{Exited: true, Err: errors.New(clip.Bytes(proc.Redacted(resp.Error), 100))}
		}
		return resp, nil
	case <-ctx.Done():
		call.Abandon()
		return nil, context.Cause(ctx)
	}
}
