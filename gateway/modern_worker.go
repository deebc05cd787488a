package gateway

import (
	"context"
	"encoding/json"
	"errors"

	"github.com/gemgate/gemgate/jsonrpc"
	"github.com/gemgate/gemgate/pool"
)

// attachModern attaches a modern request's caller to the user's worker for its era. A worker
// program that speaks 2026-07-28 itself gets the request on a sessionless worker of the
// user's (a process of its own: one stdio session is of one era, and on a session gemgate
// initialized, a go-sdk server turns its input-required results into requests of its own);
// any other worker program gets it on the user's legacy worker, which gemgate bridges. What
// the program speaks is learned from the first worker started.
func (g *Gateway) attachModern(ctx context.Context, id pool.Identity, c pool.Caller, mr *modernRequest) (*pool.Member, json.RawMessage, error) {
	a := pool.Attach{Identity: id, Caller: c, Params: legacyParams(mr)}
	if known, yes := g.pool.SessionlessWorkers(); known && yes {
		a.Sessionless = true
		m, res, err := g.pool.Attach(ctx, a)
		if !errors.Is(err, pool.ErrNotSessionless) {
			return m, res, err
		}
		a.Sessionless = false
	}
	m, res, err := g.pool.Attach(ctx, a)
	if err != nil || !m.Sessionless() {
		return m, res, err
	}
	// The first worker of the program showed it speaks the revision: this request, and the
	// next ones, go to the sessionless worker (the legacy one stays for legacy sessions,
	// until idle).
	m.Detach()
	a.Sessionless = true
	m, res, err = g.pool.Attach(ctx, a)
	if errors.Is(err, pool.ErrNotSessionless) {
		a.Sessionless = false
		return g.pool.Attach(ctx, a)
	}
	return m, res, err
}

// The tasks extension (io.modelcontextprotocol/tasks) is not one gemgate serves: discover
// does not advertise it, tasks/* are unknown methods (404 -32601), and a request that asks
// for a task anyway is served as a plain one. That is what 2026-07-28 asks of a server
// without an extension (extensions "Graceful Degradation": fall back to core behaviour).
const tasksExtension = "io.modelcontextprotocol/tasks"

// passMessage is a modern request as a sessionless worker takes it: the client's _meta kept
// (the worker reads the client's capabilities and info per request), except a declared tasks
// extension; no task parameter (a 2025-11-25 task request); and requestState replaced by
// the worker's own when the client's was gemgate's wrapping of it (workerState; "" removes
// it). Everything else keeps its bytes.
func passMessage(msg *jsonrpc.Message, retry bool, workerState string) (*jsonrpc.Message, error) {
	var params map[string]json.RawMessage
	if err := json.Unmarshal(msg.Params, &params); err != nil {
		return nil, err
	}
	if err := dropTasks(params); err != nil {
		return nil, err
	}
	if retry {
		delete(params, "requestState")
		if workerState != "" {
			params["requestState"], _ = json.Marshal(workerState)
		}
	}
	b, err := json.Marshal(params)
	if err != nil {
		return nil, err
	}
	out := *msg
	out.Params = b
	return &out, nil
}

// dropTasks removes from request params what would ask a worker for a task: the task
// parameter and the tasks extension among the client capabilities in _meta.
func dropTasks(params map[string]json.RawMessage) error {
	delete(params, "task")
	raw, ok := params["_meta"]
	if !ok {
		return nil
	}
	var meta map[string]json.RawMessage
	if err := json.Unmarshal(raw, &meta); err != nil {
		return err
	}
	capsRaw, ok := meta[metaClientCapabilities]
	if !ok {
		return nil
	}
	var caps map[string]json.RawMessage
	if err := json.Unmarshal(capsRaw, &caps); err != nil {
		return err
	}
	changed := false
	if _, ok := caps["tasks"]; ok {
		delete(caps, "tasks")
		changed = true
	}
	if extRaw, ok := caps["extensions"]; ok {
		var ext map[string]json.RawMessage
		if err := json.Unmarshal(extRaw, &ext); err == nil {
			if _, ok := ext[tasksExtension]; ok {
				delete(ext, tasksExtension)
				caps["extensions"], _ = json.Marshal(ext)
				changed = true
			}
		}
	}
	if !changed {
		return nil
	}
	meta[metaClientCapabilities], _ = json.Marshal(caps)
	params["_meta"], _ = json.Marshal(meta)
	return nil
}
