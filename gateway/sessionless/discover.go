package sessionless

import (
	"encoding/json"
	"errors"

	"github.com/gemgate/gemgate/gateway/wire"
	"github.com/gemgate/gemgate/jsonrpc"
)

// discoverFromInit builds a server/discover result from a legacy worker's InitializeResult or
// a sessionless worker's own discover answer: the versions gemgate serves (the client talks to
// gemgate), the worker's capabilities, serverInfo in _meta, instructions. It is cacheScope
// private: which worker answers depends on the caller's identity and access.
func discoverFromInit(initResult json.RawMessage, served []string) (json.RawMessage, error) {
	var init struct {
		Capabilities json.RawMessage `json:"capabilities"`
		ServerInfo   json.RawMessage `json:"serverInfo"`
		Instructions string          `json:"instructions"`
		Meta         struct {
			ServerInfo json.RawMessage `json:"io.modelcontextprotocol/serverInfo"`
		} `json:"_meta"`
	}
	if err := json.Unmarshal(initResult, &init); err != nil {
		return nil, err
	}
	if len(init.ServerInfo) == 0 {
		init.ServerInfo = init.Meta.ServerInfo // a sessionless worker's own discover answer
	}
	if len(init.Capabilities) == 0 || init.Capabilities[0] != '{' {
		return nil, errors.New("the worker's InitializeResult has no capabilities object")
	}
	out := map[string]any{
		"supportedVersions": served,
		"capabilities":      sessionlessCapabilities(init.Capabilities),
		"resultType":        "complete",
		"ttlMs":             0,
		"cacheScope":        "private",
	}
	if len(init.ServerInfo) > 0 && init.ServerInfo[0] == '{' {
		out["_meta"] = map[string]json.RawMessage{MetaServerInfo: init.ServerInfo}
	}
	if init.Instructions != "" {
		out["instructions"] = init.Instructions
	}
	return json.Marshal(out)
}

// sessionlessCapabilities are a worker's capabilities without tasks (the 2025-11-25 capability
// and the 2026-07-28 extension), which gemgate does not serve.
func sessionlessCapabilities(raw json.RawMessage) json.RawMessage {
	var caps map[string]json.RawMessage
	if json.Unmarshal(raw, &caps) != nil {
		return raw
	}
	delete(caps, "tasks")
	if extRaw, ok := caps["extensions"]; ok {
		var ext map[string]json.RawMessage
		if json.Unmarshal(extRaw, &ext) == nil {
			delete(ext, tasksExtension)
			caps["extensions"], _ = json.Marshal(ext)
		}
	}
	out, err := json.Marshal(caps)
	if err != nil {
		return raw
	}
	return out
}

// cacheable are the results the spec makes cacheable (ttlMs, cacheScope).
var cacheable = map[string]bool{
	"tools/list": true, "resources/list": true, "resources/templates/list": true, "prompts/list": true,
	"resources/read": true, "server/discover": true,
}

// spliceResult maps a worker's result to the sessionless era: resultType "complete" when the
// worker did not say, and for the cacheable ones ttlMs 0 when absent and cacheScope private always:
// what gemgate answers depends on who asks, so no shared cache may keep it.
func spliceResult(method string, result json.RawMessage) (json.RawMessage, error) {
	// Spliced, not decoded and encoded again: a result may be a megabyte.
	hasType, hasTTL, task := false, false, false
	list := cacheable[method]
	out, err := jsonrpc.EditObject(result, "result", func(k string, v json.RawMessage) json.RawMessage {
		switch k {
		case "resultType":
			hasType = true
			// decoded (lastmember.go): "t\u0061sk" is "task" to the client too
			task = task || (v[0] == '"' && wire.DecodesTo(v, "task"))
		case "task":
			task = true
		case "ttlMs":
			hasTTL = true
		case "cacheScope":
			if list {
				return nil // set below
			}
		}
		return v
	})
	if err != nil {
		return nil, errors.New("the worker's result is not an object")
	}
	if !hasType {
		out = wire.AddMember(out, "resultType", `"complete"`)
	}
	if task {
		// gemgate asked for no task (worker.go) and serves none.
		return nil, errors.New("the worker answered with a task, which gemgate does not serve")
	}
	if list {
		if !hasTTL {
			out = wire.AddMember(out, "ttlMs", `0`)
		}
		out = wire.AddMember(out, "cacheScope", `"private"`)
	}
	return out, nil
}
