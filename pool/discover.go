package pool

import (
	"context"
	"encoding/json"
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
// SessionlessVersion does. A legacy worker answers otherwise (method not found).
//
// Why not an honest discover: a dual-era server (go-sdk v1.8.0) takes a served discover as
// its stdio session's switch to the sessionless era, after which it stops sending legacy
// sessions their list_changed notifications and server-to-client requests; and before
// initialize, it would refuse gemgate's initialize as a duplicate. The refused version
// changes nothing in the worker.
func (p *Pool) discover(ctx context.Context, proc *worker.Process) bool {
	params, _ := json.Marshal(map[string]any{"_meta": map[string]any{
		"io.modelcontextprotocol/protocolVersion":    probeVersion,
		"io.modelcontextprotocol/clientCapabilities": map[string]any{},
		"io.modelcontextprotocol/clientInfo":         map[string]any{"name": "gemgate", "version": "1"},
	}})
	ctx, cancel := context.WithTimeout(ctx, min(discoverTimeout, p.opts.InitTimeout))
	defer cancel()
	call, err := proc.SendContext(ctx, &jsonrpc.Message{ID: json.RawMessage(strconv.Quote("gemgate-discover")), Method: "server/discover", Params: params})
	if err != nil {
		return false
	}
	select {
	case resp := <-call.Result():
		var e struct {
			Code int64 `json:"code"`
			Data struct {
				Supported []string `json:"supported"`
			} `json:"data"`
		}
		if resp.Error == nil || json.Unmarshal(resp.Error, &e) != nil || e.Code != codeUnsupportedVersion {
			return false
		}
		return slices.Contains(e.Data.Supported, SessionlessVersion)
	case <-ctx.Done():
		call.Abandon()
		return false
	}
}

// codeUnsupportedVersion is the sessionless revision's UnsupportedProtocolVersionError.
const codeUnsupportedVersion = -32022

// Sessionless reports whether the caller's worker speaks the sessionless revision itself; a
// modern request then goes to it as it is.
func (m *Member) Sessionless() bool {
	_, w := m.current()
	return w != nil && w.sessionless
}
