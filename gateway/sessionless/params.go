package sessionless

import "github.com/gemgate/gemgate/jsonrpc"

// requestParams are a sessionless request's params and their _meta, as jsonrpc.Parse read them:
// every check and edit of the request takes this one reading.
type requestParams struct {
	Object  jsonrpc.Object // valid when present
	Present bool           // params is there and not null
	Meta    jsonrpc.Object // params._meta
	HasMeta bool           // _meta is there and not null
}

// readParams takes msg's params and their _meta from Parse's reading. Params absent or null
// are not an error (Present is false); params or a _meta that are not an object are.
func readParams(msg *jsonrpc.Message) (requestParams, error) {
	var rp requestParams
	if len(msg.Params) == 0 || string(msg.Params) == "null" {
		return rp, nil
	}
	params, err := msg.ParamsObject()
	if err != nil {
		return rp, err
	}
	rp.Object, rp.Present = params, true
	rp.Meta, rp.HasMeta, err = params.Object("_meta")
	if err != nil {
		return requestParams{}, err
	}
	return rp, nil
}
