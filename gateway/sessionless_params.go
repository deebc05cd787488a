package gateway

import "github.com/gemgate/gemgate/jsonrpc"

// requestParams are a sessionless request's params and their _meta, as jsonrpc.Parse read them:
// every check of a sessionless request (the era checks, the header mirror, the fields, the
// requestState, the edit for the worker) takes this one reading.
type requestParams struct {
	params  jsonrpc.Object // valid when present
	present bool           // params is there and not null
	meta    jsonrpc.Object // params._meta
	hasMeta bool           // _meta is there and not null
}

// readRequestParams takes msg's params and their _meta from Parse's reading, with its key
// checks. Params that are absent or null are not an error (present is false); params that
// are not an object, or a _meta that is not one, are, with the errors ParamsObject and
// Object give.
func readRequestParams(msg *jsonrpc.Message) (requestParams, error) {
	var rp requestParams
	if len(msg.Params) == 0 || string(msg.Params) == "null" {
		return rp, nil
	}
	params, err := msg.ParamsObject()
	if err != nil {
		return rp, err
	}
	rp.params, rp.present = params, true
	rp.meta, rp.hasMeta, err = params.Object("_meta")
	if err != nil {
		return requestParams{}, err
	}
	return rp, nil
}
