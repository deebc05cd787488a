package gateway

import (
	"cmp"
	"encoding/json"
	"errors"
	"net/http"

	"github.com/gemgate/gemgate/gateway/sessionless"
	"github.com/gemgate/gemgate/gateway/wire"
	"github.com/gemgate/gemgate/jsonrpc"
)

// clientFields are what the gateway decides on, read strictly: as the worker will see them.
type clientFields struct {
	// name is what the policy decides on (params.name, params.uri or params.ref's): one field,
	// as the struct is copied in every message's frames (TestIdleStreamStackNeverDoubles).
	name          string
	progressToken json.RawMessage // params._meta.progressToken, nil when absent
	cancelID      json.RawMessage // notifications/cancelled params.requestId, nil when absent
	cancelReason  string
	eraMeta       bool // params._meta names 2026-07-28 (eraMetaError)
	refResource   bool // a completion/complete's params.ref is a ref/resource
}

// exactParams are the params keys the gateway or a server reads, per method: spelled exactly.
var (
	exactParams = map[string][]string{
		"tools/call":              {"_meta", "name", "arguments"},
		"notifications/cancelled": {"_meta", "requestId", "reason"},
		"initialize":              {"_meta", "protocolVersion", "capabilities", "clientInfo"},
		"resources/read":          {"_meta", "uri"},
		"resources/subscribe":     {"_meta", "uri"},
		"resources/unsubscribe":   {"_meta", "uri"},
		"prompts/get":             {"_meta", "name", "arguments"},
		"completion/complete":     {"_meta", "ref", "argument", "context"},
	}
	metaOnly = []string{"_meta"}
)

// gatedKey is the params key of clientFields.name, per gated method besides tools/call.
var gatedKey = map[string]string{"prompts/get": "name", "resources/read": "uri", "resources/subscribe": "uri", "completion/complete": "ref"}

// readClientFields reads clientFields. A key repeated or differing only in case is a
// *jsonrpc.KeyError (-32600); a field of the wrong type is -32602.
func readClientFields(m *jsonrpc.Message) (clientFields, *wire.Error) {
	var f clientFields
	if m.Method == "" {
		return f, nil // a response: only its id is read, and Parse has read that
	}
	if len(m.Params) == 0 || string(m.Params) == "null" {
		return f, paramsNeeded(m)
	}
	params, err := m.ParamsObject() // Parse's reading of them
	if err != nil {
		var te *jsonrpc.TypeError
		if errors.As(err, &te) && paramsNeeded(m) == nil {
			return f, nil // params by position: nothing in them the gateway reads
		}
		return f, fieldError(m, err)
	}
	meta, _, metaErr := params.Object("_meta")
	return fieldsOf(m, params, meta, metaErr)
}

// paramsNeeded refuses a gated method's message without params by name. Not inlined: its
// frame would be readClientFields' (TestIdleStreamStackNeverDoubles).
//
//go:noinline
func paramsNeeded(m *jsonrpc.Message) *wire.Error {
	if m.Method == "tools/call" {
		return invalidParams(m, "tools/call needs params.name")
	}
	if key, gated := gatedKey[m.Method]; gated {
		return invalidParams(m, m.Method+" needs params."+key)
	}
	return nil
}

// fieldsOf is readClientFields past params and _meta (metaErr comes after params' keys).
func fieldsOf(m *jsonrpc.Message, params, meta jsonrpc.Object, metaErr error) (clientFields, *wire.Error) {
	var f clientFields
	known, ok := exactParams[m.Method]
	if !ok {
		known = metaOnly
	}
	if err := params.Exact(known...); err != nil {
		return f, fieldError(m, err)
	}
	if metaErr != nil {
		return f, fieldError(m, metaErr)
	}
	if err := meta.Exact("progressToken", sessionless.MetaProtocolVersion); err != nil {
		return f, fieldError(m, err)
	}
	f.progressToken, _ = meta.Raw("progressToken")
	_, f.eraMeta = meta.Raw(sessionless.MetaProtocolVersion)

	switch m.Method {
	case "tools/call":
		name, ok, err := params.String("name")
		if err != nil {
			return f, fieldError(m, err)
		}
		if !ok || name == "" {
			return f, invalidParams(m, "tools/call needs params.name")
		}
		if args, ok := params.Raw("arguments"); ok && args[0] != '{' && string(args) != "null" {
			return f, invalidParams(m, "params.arguments must be an object")
		}
		f.name = name
	case "prompts/get", "resources/read", "resources/subscribe", "completion/complete":
		if he := targetOf(m, params, &f); he != nil {
			return f, he
		}
	case "notifications/cancelled":
		f.cancelID, _ = params.Raw("requestId")
		f.cancelReason, _, _ = params.String("reason")
	case "initialize":
		if _, _, err := params.Object("capabilities"); err != nil {
			return f, fieldError(m, err)
		}
		if _, _, err := params.Object("clientInfo"); err != nil { // as a 2026-07-28 request's
			return f, fieldError(m, err)
		}
	}
	return f, nil
}

// targetOf reads the name of a gated method besides tools/call. Not inlined: its frame would
// be fieldsOf's (TestIdleStreamStackNeverDoubles).
//
//go:noinline
func targetOf(m *jsonrpc.Message, params jsonrpc.Object, f *clientFields) *wire.Error {
	if m.Method == "completion/complete" {
		return completionRef(m, params, f)
	}
	key := gatedKey[m.Method]
	target, ok, err := params.String(key)
	if err != nil {
		return fieldError(m, err)
	}
	if !ok || target == "" {
		return invalidParams(m, m.Method+" needs params."+key)
	}
	f.name = target
	return nil
}

// completionRef reads params.ref's name or URI; both is refused (readers differ on it).
func completionRef(m *jsonrpc.Message, params jsonrpc.Object, f *clientFields) *wire.Error {
	ref, ok, err := params.Object("ref")
	if err == nil && !ok {
		return invalidParams(m, "completion/complete needs params.ref")
	}
	if err == nil {
		err = ref.Exact("type", "name", "uri")
	}
	if err != nil {
		return fieldError(m, err)
	}
	typ, _, err := ref.String("type")
	key := map[string]string{"ref/prompt": "name", "ref/resource": "uri"}[typ]
	if err == nil && key == "" {
		return invalidParams(m, "params.ref.type must be ref/prompt or ref/resource")
	}
	target, ok, err2 := ref.String(key)
	if err = cmp.Or(err, err2); err != nil {
		return fieldError(m, err)
	}
	if ref.Has(map[string]string{"name": "uri", "uri": "name"}[key]) {
		return invalidParams(m, "params.ref of type "+typ+" names both a prompt and a resource")
	}
	if !ok || target == "" {
		return invalidParams(m, "completion/complete needs params.ref."+key)
	}
	f.name, f.refResource = target, typ == "ref/resource"
	return nil
}

func fieldError(m *jsonrpc.Message, err error) *wire.Error {
	var te *jsonrpc.TypeError
	if errors.As(err, &te) {
		return invalidParams(m, te.Error())
	}
	return &wire.Error{Status: http.StatusBadRequest, Code: jsonrpc.CodeInvalidRequest, ID: m.ID, Message: err.Error()}
}

func invalidParams(m *jsonrpc.Message, msg string) *wire.Error {
	if m.ID == nil { // a notification has no answer to carry an error
		return &wire.Error{Status: http.StatusBadRequest, Code: jsonrpc.CodeInvalidParams, Message: msg}
	}
	return &wire.Error{Status: http.StatusOK, Code: jsonrpc.CodeInvalidParams, ID: m.ID, Message: msg}
}
