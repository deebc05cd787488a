package pool

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strconv"
	"time"

	"github.com/gemgate/gemgate/jsonrpc"
	"github.com/gemgate/gemgate/worker"
)

// The sessionless revision (2026-07-28). A worker that lists it in its own server/discover
// answer takes sessionless requests as they are; gemgate still initializes it, so that legacy
// sessions keep working on it.

// SessionlessVersion is the sessionless protocol revision.
const SessionlessVersion = "2026-07-28"

// discoverTimeout bounds the probe: a worker that ignores an unknown method must not hold up
// its start for the whole init timeout.
const discoverTimeout = 5 * time.Second

// probeVersion is a revision no server implements, later than every real one: a sessionless
// server must answer it with UnsupportedProtocolVersionError (-32022) listing the versions it
// does support, before it does anything else with the request.
const probeVersion = "9999-12-31"

// discover learns whether a freshly initialized worker speaks the sessionless revision: it
// sends server/discover naming probeVersion, and a worker whose -32022 answer lists
// SessionlessVersion does. A real discover would switch a dual-era server's stdio session to
// the sessionless era (go-sdk v1.8.0), cutting off legacy sessions; a refused version
// changes nothing.
//
// sure is false when the worker gave no usable answer: one worker's trouble must not teach
// the pool what the program speaks.
func (p *Pool) discover(ctx context.Context, proc *worker.Process) (sessionless, sure bool) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), min(discoverTimeout, p.opts.InitTimeout))
	defer cancel()
	resp, err := p.openingCall(ctx, proc, "gemgate-discover", "server/discover", sessionlessParams(probeVersion, nil))
	if err != nil || resp.Error == nil {
		return false, false
	}
	var e struct {
		Code int64 `json:"code"`
		Data struct {
			Supported []string `json:"supported"`
		} `json:"data"`
	}
	switch {
	case json.Unmarshal(resp.Error, &e) != nil:
	case e.Code == codeUnsupportedVersion:
		return slices.Contains(e.Data.Supported, SessionlessVersion), true
	case e.Code == jsonrpc.CodeMethodNotFound: // a legacy worker: no server/discover at all
		return false, true
	}
	return false, false
}

// codeUnsupportedVersion is the sessionless revision's UnsupportedProtocolVersionError.
const codeUnsupportedVersion = -32022

// SpeaksSessionless reports whether the caller's worker speaks the sessionless revision itself; a
// sessionless request then goes to it as it is.
func (m *Member) SpeaksSessionless() bool {
	_, w := m.current()
	return w != nil && w.sessionless
}

// ErrNotSessionless: a worker started for sessionless requests (Attach.Sessionless) did not
// take a 2026-07-28 server/discover; the caller serves the request the legacy way instead.
var ErrNotSessionless = errors.New("the worker does not speak the sessionless revision")

// openSessionless opens a fresh worker's stdio session in the sessionless era, with a
// server/discover naming SessionlessVersion instead of initialize. The worker then returns
// input-required results itself. The discover result stands for the InitializeResult.
func (p *Pool) openSessionless(ctx context.Context, proc *worker.Process) (json.RawMessage, error) {
	resp, err := p.openingCall(ctx, proc, "gemgate-discover", "server/discover", sessionlessParams(SessionlessVersion, nil))
	if err != nil {
		return nil, err
	}
	var res struct {
		SupportedVersions []string        `json:"supportedVersions"`
		Capabilities      json.RawMessage `json:"capabilities"`
	}
	if resp.Error != nil || json.Unmarshal(resp.Result, &res) != nil ||
		!slices.Contains(res.SupportedVersions, SessionlessVersion) || len(res.Capabilities) == 0 || res.Capabilities[0] != '{' {
		p.learnEra(false)
		return nil, ErrNotSessionless
	}
	p.learnEra(true)
	p.listenForChanges(ctx, proc)
	return resp.Result, nil
}

// listenForChanges opens gemgate's own subscriptions/listen at a sessionless worker, for its
// whole life: such a worker sends list_changed only on a listen stream. They reach the pool
// like a legacy worker's. The answer is never awaited.
func (p *Pool) listenForChanges(ctx context.Context, proc *worker.Process) {
	params := json.RawMessage(`{"notifications":{"promptsListChanged":true,"resourcesListChanged":true,"toolsListChanged":true}}`)
	// The call's answer lands in its buffered result channel, which nobody reads: nothing
	// waits on it.
	_, _ = proc.Send(ctx, &jsonrpc.Message{ID: json.RawMessage(strconv.Quote("gemgate-listen")), Method: "subscriptions/listen", Params: sessionlessParams(SessionlessVersion, params)}, nil)
}

// sessionlessParams are params with the _meta a sessionless request of gemgate's own at
// version carries: gemgate as the client, declaring no client capabilities (a worker must not
// ask gemgate itself for input).
func sessionlessParams(version string, params json.RawMessage) json.RawMessage {
	fields := map[string]json.RawMessage{}
	if len(params) > 0 {
		_ = json.Unmarshal(params, &fields)
	}
	fields["_meta"], _ = json.Marshal(map[string]any{
		"io.modelcontextprotocol/protocolVersion":    version,
		"io.modelcontextprotocol/clientCapabilities": map[string]any{},
		"io.modelcontextprotocol/clientInfo":         clientInfo,
	})
	out, _ := json.Marshal(fields)
	return out
}

// clientInfo is how gemgate names itself as a worker's client.
var clientInfo = map[string]any{"name": "gemgate", "version": "1"}

// ownParams are the params of a request of gemgate's own to the slot's worker: with the _meta
// of the sessionless revision when gemgate opened its session with server/discover.
func (s *slot) ownParams(params json.RawMessage) json.RawMessage {
	if s.key.Sessionless {
		return sessionlessParams(SessionlessVersion, params)
	}
	return params
}

// learnEra records whether the worker program speaks the sessionless revision (Pool.eras). A
// yes is never unlearned, since a later no is one worker's trouble.
func (p *Pool) learnEra(sessionless bool) {
	if sessionless {
		p.eras.Store(1)
	} else {
		p.eras.CompareAndSwap(0, 2)
	}
}

// SessionlessWorkers reports what the pool knows of its worker program: known is false until
// a worker has started; then yes tells whether it speaks the sessionless revision.
func (p *Pool) SessionlessWorkers() (known, yes bool) {
	v := p.eras.Load()
	return v != 0, v == 1
}

// AttachedSessionless reports whether the caller attached to the user's sessionless worker
// (Attach.Sessionless). It is fixed at attach, so that a worker's exit does not change how a
// call in flight is read.
func (m *Member) AttachedSessionless() bool { return m.attachedSessionless }
