package sessionless

import (
	"context"
	"encoding/json"
	"errors"

	"github.com/gemgate/gemgate/gateway/wire"
	"github.com/gemgate/gemgate/jsonrpc"
	"github.com/gemgate/gemgate/pool"
)

// attach attaches a request's caller to the user's worker. A worker program that speaks
// 2026-07-28 gets it on the user's sessionless worker (a process of its own: one stdio session
// is of one era, and on a session gemgate initialized, a go-sdk server turns its input-required
// results into requests); any other on the user's legacy worker, which gemgate bridges. What
// the program speaks is learned from the first worker started.
func (a *Adapter) attach(ctx context.Context, id pool.Identity, c pool.Caller, mr *checks) (*pool.Member, json.RawMessage, error) {
	at := pool.Attach{Identity: id, Caller: c, Params: legacyParams(mr, a.Legacy[0]), Caps: &askAll}
	if Program(a.Pool) {
		at.Sessionless = true
		m, res, err := a.Pool.Attach(ctx, at)
		if !errors.Is(err, pool.ErrNotSessionless) {
			return m, res, err
		}
		at.Sessionless = false
	}
	m, res, err := a.Pool.Attach(ctx, at)
	if err != nil || !m.SpeaksSessionless() {
		return m, res, err
	}
	// The program's first worker speaks the revision: this request and the next go to the
	// sessionless worker (the legacy one stays for legacy sessions, until idle).
	m.Detach()
	at.Sessionless = true
	m, res, err = a.Pool.Attach(ctx, at)
	if errors.Is(err, pool.ErrNotSessionless) {
		at.Sessionless = false
		return a.Pool.Attach(ctx, at)
	}
	return m, res, err
}

// Program reports whether p's worker program is known to speak 2026-07-28: then a sessionless
// request goes to the user's sessionless worker, the one a drain asks about (Steps.DrainRefusal).
func Program(p *pool.Pool) bool {
	known, yes := p.SessionlessWorkers()
	return known && yes
}

// The tasks extension is not one gemgate serves: discover does not advertise it, tasks/* are
// unknown methods, and a request that asks for a task is served as a plain one, as 2026-07-28
// asks of a server without an extension (extensions, "Graceful Degradation").
const tasksExtension = "io.modelcontextprotocol/tasks"

// passMessageOf is a sessionless request as a sessionless worker takes it, on check's reading:
// the client's _meta kept but for the tasks extension and capability; no task parameter (a
// 2025-11-25 task request); and on a retry requestState replaced by the worker's own
// (workerState; "" removes it). Everything else keeps its bytes.
func passMessageOf(msg *jsonrpc.Message, rp requestParams, retry bool, workerState string) (*jsonrpc.Message, error) {
	// Spliced, not decoded and encoded again: the arguments may be a megabyte.
	var inner error
	params := rp.Object.Edit(func(key string, v json.RawMessage) json.RawMessage {
		switch key {
		case "task":
			return nil
		case "requestState":
			if retry {
				return nil // the worker's own, if any, is added below
			}
		case "_meta":
			if !rp.HasMeta {
				return v // null
			}
			meta, err := dropTasks(rp.Meta)
			if err != nil {
				inner = err
			}
			return meta
		}
		return v
	})
	if inner != nil {
		return nil, inner
	}
	if retry && workerState != "" {
		st, err := json.Marshal(workerState)
		if err != nil {
			return nil, err
		}
		params = wire.AddMember(params, "requestState", string(st))
	}
	out := *msg
	out.Params = params
	return &out, nil
}

// dropTasks removes from a request's _meta the tasks extension and capability among the
// client capabilities; every other member keeps its bytes.
func dropTasks(meta jsonrpc.Object) (json.RawMessage, error) {
	var inner error
	out := meta.Edit(func(key string, v json.RawMessage) json.RawMessage {
		if key != MetaClientCapabilities || string(v) == "null" {
			return v
		}
		caps, err := jsonrpc.EditObject(v, "params._meta.clientCapabilities", func(key string, v json.RawMessage) json.RawMessage {
			switch key {
			case "tasks":
				return nil
			case "extensions":
				// Read strictly: one that names the tasks extension twice (or in two
				// spellings) is refused, never passed on to a worker that keeps the last.
				ext, err := jsonrpc.EditObject(v, "params._meta.clientCapabilities.extensions", func(key string, v json.RawMessage) json.RawMessage {
					if key == tasksExtension {
						return nil
					}
					return v
				})
				if err != nil {
					inner = err
					return v
				}
				return ext
			}
			return v
		})
		if err != nil {
			inner = err
			return v
		}
		return caps
	})
	return out, inner
}
