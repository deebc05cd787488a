package gateway

import (
	"context"
	"encoding/json"
	"slices"
	"time"

	"github.com/gemgate/gemgate/jsonrpc"
	"github.com/gemgate/gemgate/policy"
)

// A call the policy refuses is checked against the worker's own tool list before it is
// answered: a tool that does not exist gets the worker's kind of answer (-32602 "unknown
// tool"), not a scope challenge that would send the client into a re-login over a typo. The
// list is asked for afresh each time, so a tool added or removed since is seen as it is now;
// a client can ask for the list itself anyway, so this costs it nothing it could not spend.

const (
	// toolLookupTimeout bounds how long a refused call waits for the worker's list.
	toolLookupTimeout = 10 * time.Second
	// toolLookupPages bounds how many pages of the list are read.
	toolLookupPages = 100
)

// toolExists reports whether the session's worker lists a tool called name. known is false
// when the worker could not tell (an error, a timeout, a malformed or endless list): the
// caller then refuses the call as it would refuse a real tool.
func (g *Gateway) toolExists(ctx context.Context, s *session, name string) (exists, known bool) {
	ctx, cancel := context.WithTimeout(ctx, toolLookupTimeout)
	defer cancel()
	params := json.RawMessage(`{}`)
	for range toolLookupPages {
		result, ok := s.member.Ask(ctx, "tools/list", params)
		if !ok {
			return false, false
		}
		names, err := policy.ToolNames(result)
		if err != nil {
			s.log.Warn("worker's tools/list answer is malformed", "error", err)
			return false, false
		}
		if slices.Contains(names, name) {
			return true, true
		}
		page, err := jsonrpc.ReadObject(result, "result")
		if err != nil {
			return false, false
		}
		cursor, more, err := page.String("nextCursor")
		if err != nil {
			return false, false
		}
		if !more || cursor == "" {
			return false, true
		}
		params, _ = json.Marshal(map[string]string{"cursor": cursor})
	}
	return false, false
}
