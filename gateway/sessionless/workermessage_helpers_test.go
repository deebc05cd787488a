package sessionless

import (
	"github.com/gemgate/gemgate/jsonrpc"
)

// legacyMessage is legacyMessageOf on a message's params, read here.
func legacyMessage(msg *jsonrpc.Message) (*jsonrpc.Message, error) {
	rp, err := readParams(msg)
	if err != nil {
		return nil, err
	}
	if !rp.Present {
		_, err := msg.ParamsObject() // absent or null params: the error an edit of them gives
		return nil, err
	}
	return legacyMessageOf(msg, rp), nil
}

// requestStateOf is requestStateIn on a message's params, read here.
func requestStateOf(msg *jsonrpc.Message) (string, bool, error) {
	if len(msg.Params) == 0 || string(msg.Params) == "null" {
		return "", false, nil
	}
	params, err := msg.ParamsObject()
	if err != nil {
		return "", false, err
	}
	return requestStateIn(requestParams{Object: params, Present: true})
}

// passMessage is passMessageOf on a message's params and their _meta, read here.
func passMessage(msg *jsonrpc.Message, retry bool, workerState string) (*jsonrpc.Message, error) {
	if len(msg.Params) == 0 || string(msg.Params) == "null" {
		_, err := msg.ParamsObject() // absent or null params: the error an edit of them gives
		return nil, err
	}
	params, err := msg.ParamsObject()
	if err != nil {
		return nil, err
	}
	rp := requestParams{Object: params, Present: true}
	if raw, ok := params.Raw("_meta"); ok && string(raw) != "null" {
		if rp.Meta, err = jsonrpc.ReadObject(raw, "params._meta"); err != nil {
			return nil, err
		}
		rp.HasMeta = true
	}
	return passMessageOf(msg, rp, retry, workerState)
}
