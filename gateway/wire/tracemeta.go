package wire

import (
	"encoding/json"
	"errors"
	"strings"

	"github.com/gemgate/gemgate/jsonrpc"
)

// traceKeys are the params._meta members of trace context (SEP-414), in order.
var traceKeys = []string{"traceparent", "tracestate", "baggage"}

// WithTraceMeta is msg with carrier's trace context in params._meta, replacing the client's
// in any case (an empty carrier removes it); every other member keeps its bytes. A nil carrier
// (tracing off) leaves msg as it is.
func WithTraceMeta(msg *jsonrpc.Message, carrier map[string]string) (*jsonrpc.Message, error) {
	if carrier == nil {
		return msg, nil
	}
	out := *msg
	noParams := len(msg.Params) == 0 || string(msg.Params) == "null"
	if noParams && len(carrier) == 0 {
		return msg, nil
	}
	if noParams {
		out.Params = AddMember([]byte("{}"), "_meta", string(withTrace([]byte("{}"), carrier)))
		return &out, nil
	}
	params, err := msg.ParamsObject()
	var te *jsonrpc.TypeError
	if errors.As(err, &te) {
		return msg, nil // params by position: no _meta to carry it
	}
	if err != nil {
		return nil, err
	}
	if err := params.Exact("_meta"); err != nil {
		return nil, err // a _meta in another case: the strict reading refuses the message
	}
	meta, has, err := params.Object("_meta")
	if err != nil {
		return nil, err
	}
	if !has && len(carrier) == 0 {
		return msg, nil
	}
	newMeta := []byte("{}")
	if has {
		newMeta = meta.Edit(func(k string, v json.RawMessage) json.RawMessage {
			for _, t := range traceKeys {
				if strings.EqualFold(k, t) {
					return nil
				}
			}
			return v
		})
	}
	newMeta = withTrace(newMeta, carrier)
	found := false
	out.Params = params.Edit(func(k string, v json.RawMessage) json.RawMessage {
		if k == "_meta" {
			found = true
			return newMeta
		}
		return v
	})
	if !found {
		out.Params = AddMember(out.Params, "_meta", string(newMeta))
	}
	return &out, nil
}

func withTrace(meta []byte, carrier map[string]string) []byte {
	for _, k := range traceKeys {
		if v := carrier[k]; v != "" {
			q, _ := json.Marshal(v)
			meta = AddMember(meta, k, string(q))
		}
	}
	return meta
}
