package sessionless

import (
	"encoding/json"

	"github.com/gemgate/gemgate/jsonrpc"
	"github.com/gemgate/gemgate/pool"
)

// declared are the client capabilities a sessionless request declares in its _meta, as the
// bridge decides on them: a capability is declared when its member is an object, as a
// go-sdk server reads it (a null member decodes to no capability at all). The keys were read
// exactly (check refuses a duplicate or a case variant), so the worker reads the same.
type declared struct{ sampling, elicitation, roots bool }

func declaredCaps(caps jsonrpc.Object) declared {
	isObject := func(k string) bool {
		raw, ok := caps.Raw(k)
		return ok && len(raw) > 0 && raw[0] == '{'
	}
	return declared{sampling: isObject("sampling"), elicitation: isObject("elicitation"), roots: isObject("roots")}
}

// askAll are the capabilities a sessionless caller is attached with: every worker question
// within its call reaches the bridge, which decides on the request's own declaration
// (declared.sort), rather than the pool answering it unasked.
var askAll = pool.Capabilities{Sampling: true, Elicitation: true, Roots: true}

// needs is the client capability a worker's question needs; "" for one that needs none.
func needs(method string) string {
	switch method {
	case "sampling/createMessage":
		return "sampling"
	case "elicitation/create":
		return "elicitation"
	case "roots/list":
		return "roots"
	}
	return ""
}

func (d declared) has(capability string) bool {
	switch capability {
	case "sampling":
		return d.sampling
	case "elicitation":
		return d.elicitation
	case "roots":
		return d.roots
	}
	return true
}

// sort keeps the worker's questions the client declared it can answer, and refuses the others
// to the worker (refuse: Member.Refuse) with an error, as a legacy client without the
// capability would. lacking names the capabilities refused, as
// MissingRequiredClientCapability's requiredCapabilities (a ClientCapabilities object).
func (d declared) sort(asked map[string]*jsonrpc.Message, refuse func(id json.RawMessage, why string) bool) (kept map[string]*jsonrpc.Message, lacking map[string]any) {
	kept, lacking = map[string]*jsonrpc.Message{}, map[string]any{}
	for key, req := range asked {
		if c := needs(req.Method); !d.has(c) {
			lacking[c] = json.RawMessage(`{}`)
			refuse(req.ID, "the client did not declare the "+c+" capability")
			continue
		}
		kept[key] = req
	}
	return kept, lacking
}
