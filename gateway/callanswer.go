package gateway

import (
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"

	"github.com/gemgate/gemgate/jsonrpc"
	"github.com/gemgate/gemgate/policy"
	"github.com/gemgate/gemgate/pool"
)

// filterTools applies the policy to a list answer (tools, prompts, resources, templates), in
// either era: what the access may not use is dropped, a malformed list fails closed. It
// returns the tools' annotations. For read-only callers the log says once per worker what was
// hidden and what would show it.
func (g *Gateway) filterTools(log *slog.Logger, m *pool.Member, method string, access policy.Access,
	resp *jsonrpc.Message) (*jsonrpc.Message, map[string]policy.Hints) {
	if !policy.Filters(method) || resp.Result == nil {
		return resp, nil
	}
	filtered, hints, err := g.opts.Policy.FilterList(method, access, resp.Result)
	if err != nil {
		log.Warn("worker's "+method+" answer is malformed; refused", "error", err)
		return jsonrpc.ErrorResponse(resp.ID, jsonrpc.CodeInternalError, "the worker's "+strings.TrimSuffix(method, "/list")+" list is malformed", nil), nil
	}
	if access.ReadOnly && method == "tools/list" {
		visible, hidden, total := g.hiddenTools(access, resp.Result, hints)
		if hidden > 0 && m.FirstTime("read-only tools hidden") {
			log.Info(fmt.Sprintf("read-only sessions see %d of %d tools of this worker; list the safe ones in read_only_tools (policy/presets has some servers' lists) or set trust_read_only_hints",
				visible, total), "hidden", hidden, "tools", total)
		}
	}
	out := *resp
	out.Result = filtered
	return &out, hints
}

// hiddenTools counts the tools of a list that read-only access sees and those it does not.
func (g *Gateway) hiddenTools(access policy.Access, result json.RawMessage, hints map[string]policy.Hints) (visible, hidden, total int) {
	var all struct {
		Tools []struct {
			Name string `json:"name"`
		} `json:"tools"`
	}
	if json.Unmarshal(result, &all) != nil {
		return 0, 0, 0
	}
	for _, tool := range all.Tools {
		switch g.opts.Policy.CheckTool(access, tool.Name, hintOf(hints, tool.Name)) {
		case policy.DeniedReadOnly:
			hidden++
		case policy.Allowed:
			visible++
		}
	}
	return visible, hidden, len(all.Tools)
}

// learnHints keeps the readOnlyHints of a session's last tools/list, for its tool gate.
func (s *session) learnHints(hints map[string]policy.Hints) {
	if len(hints) == 0 {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.hints == nil {
		s.hints = make(map[string]policy.Hints, len(hints))
	}
	for name, h := range hints {
		s.hints[name] = h
	}
}

func callOutcome(method string, resp *jsonrpc.Message) string {
	switch {
	case resp.Error != nil:
		return "error"
	case method == "tools/call" && isToolError(resp.Result):
		return "tool_error"
	}
	return "ok"
}
