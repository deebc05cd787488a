package sessionless

import (
	"encoding/json"

	"github.com/gemgate/gemgate/jsonrpc"
	"github.com/gemgate/gemgate/pool"
)

// declared are the client capabilities a sessionless request declares in its _meta: a
// capability is declared when its member is an object, as a go-sdk server reads it (null is no
// capability). check read the keys exactly, so the worker reads the same.
type declared struct{ sampling, elicitation, roots bool }

func declaredCaps(caps jsonrpc.Object) declared {
	c := pool.DeclaredIn(caps) // as a session's initialize declares them
	return declared{sampling: c.Sampling, elicitation: c.Elicitation, roots: c.Roots}
}

// askAll are the capabilities a sessionless caller is attached with: every worker question
// within its call reaches the bridge, which decides on the request's declaration (sort),
// rather than the pool answering it unasked.
var askAll = pool.Capabilities{Sampling: true, Elicitation: true, Roots: true}

// lacks is the client capability a worker's question needs and the request did not declare;
// "" for none.
func (d declared) lacks(method string) string {
	switch {
	case method == "sampling/createMessage" && !d.sampling:
		return "sampling"
	case method == "elicitation/create" && !d.elicitation:
		return "elicitation"
	case method == "roots/list" && !d.roots:
		return "roots"
	}
	return ""
}

// sort keeps the worker's questions the client declared it can answer, and refuses the others
// to the worker (refuse: Member.Refuse), as a legacy client without the capability would.
// lacking names those capabilities, as MissingRequiredClientCapability's requiredCapabilities.
func (d declared) sort(asked map[string]*jsonrpc.Message, refuse func(id json.RawMessage, why string) bool) (kept map[string]*jsonrpc.Message, lacking map[string]any) {
	kept, lacking = map[string]*jsonrpc.Message{}, map[string]any{}
	for key, req := range asked {
		if c := d.lacks(req.Method); c != "" {
			lacking[c] = json.RawMessage(`{}`)
			refuse(req.ID, "the client did not declare the "+c+" capability")
			continue
		}
		kept[key] = req
	}
	return kept, lacking
}
