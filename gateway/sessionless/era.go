package sessionless

import (
	"encoding/base64"
	"errors"
	"net/http"
	"strings"

	"github.com/gemgate/gemgate/gateway/wire"
	textclip "github.com/gemgate/gemgate/internal/clip"
	"github.com/gemgate/gemgate/jsonrpc"
	"github.com/gemgate/gemgate/pool"
)

// The 2026-07-28 revision is sessionless: every request names its protocol version, client
// capabilities and client info in _meta, and no initialize comes first. Both eras share the
// one endpoint (Is).

// Version is the sessionless revision gemgate serves.
const Version = "2026-07-28"

// _meta keys of the sessionless era (basic/index.mdx).
const (
	MetaProtocolVersion    = "io.modelcontextprotocol/protocolVersion"
	MetaClientCapabilities = "io.modelcontextprotocol/clientCapabilities"
	MetaClientInfo         = "io.modelcontextprotocol/clientInfo"
	MetaServerInfo         = "io.modelcontextprotocol/serverInfo"
	MetaLogLevel           = "io.modelcontextprotocol/logLevel"
	MetaSubscriptionID     = "io.modelcontextprotocol/subscriptionId"
	MetaPrefix             = "io.modelcontextprotocol/"
)

// Error codes (basic/index.mdx, Error Codes) and headers of the sessionless era.
const (
	CodeHeaderMismatch     = -32020
	CodeMissingCapability  = -32021
	CodeUnsupportedVersion = -32022
	HeaderMethod           = "Mcp-Method"
	HeaderName             = "Mcp-Name"
	HeaderProtocolVersion  = "Mcp-Protocol-Version"
	// HeaderSessionID is the legacy era's: a request that carries it is not sessionless.
	HeaderSessionID    = "Mcp-Session-Id"
	base64HeaderPrefix = "=?base64?"
	base64HeaderSuffix = "?="
)

// sessionlessMethods are the requests a sessionless client may send. Everything else, the
// legacy-only initialize, ping, logging/setLevel and resources/(un)subscribe too, is 404 -32601.
var sessionlessMethods = map[string]bool{
	"server/discover":          true,
	"tools/list":               true,
	"tools/call":               true,
	"resources/list":           true,
	"resources/templates/list": true,
	"resources/read":           true,
	"prompts/list":             true,
	"prompts/get":              true,
	"completion/complete":      true,
	"subscriptions/listen":     true,
}

// namedMethods are the methods whose Mcp-Name header mirrors a params field.
var namedMethods = map[string]string{"tools/call": "name", "prompts/get": "name", "resources/read": "uri"}

// Is classifies a POSTed message: true for the 2026-07-28 era, when it carries no
// Mcp-Session-Id and its MCP-Protocol-Version header or its _meta version is 2026-07-28 or
// later (a later or unknown one is refused by check as unsupported). Nothing is trusted yet.
func Is(r *http.Request, msg *jsonrpc.Message) bool {
	if r.Header.Get(HeaderSessionID) != "" {
		return false
	}
	if sessionlessOrLater(r.Header.Get(HeaderProtocolVersion)) {
		return true
	}
	rp, err := readParams(msg)
	if err != nil || !rp.HasMeta {
		return false
	}
	v, _, _ := rp.Meta.String(MetaProtocolVersion)
	return sessionlessOrLater(v)
}

// sessionlessOrLater: revision names are dates, so a later one sorts after; a name that is no
// date at all (v999.0.0) sorts after every date and is refused as unsupported.
func sessionlessOrLater(v string) bool { return v != "" && v >= Version }

// checks is what the checks of a sessionless request learned.
type checks struct {
	Params     requestParams  // every later check and edit uses this reading
	Caps       jsonrpc.Object // _meta clientCapabilities
	ClientInfo []byte         // _meta clientInfo, raw; nil when absent
	LogLevel   string         // _meta logLevel, one of MCP's levels; "" means no log messages for this request
	Name       string         // params.name or params.uri for the named methods
}

// check applies the era's rules to a request, in the reference SDK's order: the method is
// known (404), the version header and _meta agree and are served, the required _meta fields
// are there, and Mcp-Method and Mcp-Name mirror the body. The policy decides later, on the
// body's values only.
func check(r *http.Request, msg *jsonrpc.Message, served []string) (checks, *wire.Error) {
	if !sessionlessMethods[msg.Method] {
		return checks{}, &wire.Error{Status: http.StatusNotFound, Code: jsonrpc.CodeMethodNotFound, ID: msg.ID,
			Message: "method " + textclip.Quote(msg.Method) + " is not available in protocol version " + Version}
	}
	header := r.Header.Get(HeaderProtocolVersion)
	if header == "" {
		return checks{}, refusal(msg, CodeHeaderMismatch,
			"the MCP-Protocol-Version header is required on every "+Version+" request")
	}
	rp, err := readParams(msg)
	if err != nil {
		return checks{}, strictError(msg, err)
	}
	if !rp.HasMeta {
		return checks{}, refusal(msg, jsonrpc.CodeInvalidParams, "params._meta is required")
	}
	meta := rp.Meta
	if err := meta.Exact(MetaProtocolVersion, MetaClientCapabilities, MetaClientInfo, MetaLogLevel, "progressToken"); err != nil {
		return checks{}, strictError(msg, err)
	}
	version, _, err := meta.String(MetaProtocolVersion)
	if err != nil || version == "" {
		return checks{}, refusal(msg, jsonrpc.CodeInvalidParams,
			"missing or invalid _meta field "+textclip.Quote(MetaProtocolVersion))
	}
	if header != version {
		return checks{}, refusal(msg, CodeHeaderMismatch,
			"the MCP-Protocol-Version header "+textclip.Quote(header)+" does not match _meta "+textclip.Quote(version))
	}
	if version != Version {
		return checks{}, unsupported(msg, "unsupported protocol version "+textclip.Quote(version), served, version)
	}
	mr := checks{Params: rp}
	caps, ok, err := meta.Object(MetaClientCapabilities)
	if err != nil || !ok {
		return checks{}, refusal(msg, jsonrpc.CodeInvalidParams,
			"missing or invalid _meta field "+textclip.Quote(MetaClientCapabilities))
	}
	// The capabilities gemgate decides on or removes are read by exact key: a worker reading
	// keys without regard to case would take a case variant for the real one.
	if err := caps.Exact("elicitation", "sampling", "roots", "tasks", "extensions"); err != nil {
		return checks{}, strictError(msg, err)
	}
	mr.Caps = caps
	if _, ok, err := meta.Object(MetaClientInfo); err != nil {
		return checks{}, refusal(msg, jsonrpc.CodeInvalidParams,
			"invalid _meta field "+textclip.Quote(MetaClientInfo))
	} else if ok {
		mr.ClientInfo, _ = meta.Raw(MetaClientInfo)
	}
	if he := readLogLevel(msg, meta, &mr); he != nil {
		return checks{}, he
	}
	if he := checkMirrorHeaders(r, msg, &mr); he != nil {
		return checks{}, he
	}
	return mr, nil
}

// readLogLevel sets mr.LogLevel from _meta logLevel. A level gemgate cannot read is refused, as
// a session's logging/setLevel is (pool); null counts as absent. (A function of its own: check's
// frame is on the stack of every idle listen stream.)
func readLogLevel(msg *jsonrpc.Message, meta jsonrpc.Object, mr *checks) *wire.Error {
	lvl, set, err := meta.String(MetaLogLevel)
	if err != nil || set && pool.LogLevel(lvl) < 0 {
		return refusal(msg, jsonrpc.CodeInvalidParams,
			"invalid _meta field "+textclip.Quote(MetaLogLevel)+": one of "+pool.LogLevels())
	}
	mr.LogLevel = lvl
	return nil
}

// checkMirrorHeaders: Mcp-Method must equal the body's method, and for the named methods
// Mcp-Name (plain, or =?base64?…?=) the body's name or uri. A proxy or WAF may route on these
// headers; gemgate never decides on them, but refuses headers that say what the body does not.
// Both are compared byte for byte, as the worker's SDK does: net/http has taken off the spaces
// and tabs around a value, and other white space (NO-BREAK SPACE, LINE SEPARATOR) is part of
// what a proxy sees. An Mcp-Name that is not the body's bytes must be visible ASCII or base64.
func checkMirrorHeaders(r *http.Request, msg *jsonrpc.Message, mr *checks) *wire.Error {
	m := r.Header.Get(HeaderMethod)
	if m == "" {
		return refusal(msg, CodeHeaderMismatch, "the Mcp-Method header is required")
	}
	if m != msg.Method {
		return refusal(msg, CodeHeaderMismatch,
			"the Mcp-Method header "+textclip.Quote(m)+" does not match the body's method "+textclip.Quote(msg.Method))
	}
	field, named := namedMethods[msg.Method]
	if !named {
		return nil
	}
	params := mr.Params.Object // an object: check found _meta in it
	if err := params.Exact(field); err != nil {
		return strictError(msg, err)
	}
	body, _, err := params.String(field)
	if err != nil {
		return strictError(msg, err)
	}
	mr.Name = body
	h := r.Header.Get(HeaderName)
	if h == "" {
		return refusal(msg, CodeHeaderMismatch, "the Mcp-Name header is required for "+msg.Method)
	}
	if h == body && !sentinelForm(h) {
		// The body's own bytes, as the go-sdk client sends a name outside ASCII and its server
		// compares it: a proxy sees the bytes gemgate compared. Not the =?base64?…?= form,
		// which every reader in front decodes.
		return nil
	}
	v, err := plainHeaderValue(h)
	if err != nil {
		return refusal(msg, CodeHeaderMismatch, "the Mcp-Name header "+err.Error())
	}
	if v != body {
		return refusal(msg, CodeHeaderMismatch,
			"the Mcp-Name header "+textclip.Quote(v)+" does not match the body's "+field+" "+textclip.Quote(body))
	}
	return nil
}

var (
	errBadBase64     = errors.New("is not valid: its =?base64?…?= form does not decode")
	errMustBeEncoded = errors.New("holds characters that must be sent base64-encoded (=?base64?...?=)")
)

// plainHeaderValue is the value a mirrored header (Mcp-Name, Mcp-Param-*) stands for: visible
// ASCII, spaces and tabs (SEP-2243: proxies read other bytes each their own way), decoded from
// the =?base64?<standard base64>?= form. The base64 is read strictly (padding bits zero): one
// value has one spelling, so a proxy that matches the encoded form sees every header gemgate
// takes for that value.
func plainHeaderValue(h string) (string, error) {
	if !HeaderSafe(h) {
		return "", errMustBeEncoded
	}
	if !sentinelForm(h) {
		return h, nil
	}
	inner := h[len(base64HeaderPrefix) : len(h)-len(base64HeaderSuffix)]
	b, err := base64.StdEncoding.Strict().DecodeString(inner)
	if err != nil {
		return "", errBadBase64
	}
	return string(b), nil
}

// HeaderSafe reports whether a header value is visible ASCII, spaces and tabs only: what every
// reader in front reads alike.
func HeaderSafe(v string) bool {
	for i := 0; i < len(v); i++ {
		if c := v[i]; c < 0x20 && c != '\t' || c > 0x7e {
			return false
		}
	}
	return true
}

// sentinelForm reports whether a header value has the =?base64?…?= form.
func sentinelForm(v string) bool {
	return strings.HasPrefix(v, base64HeaderPrefix) && strings.HasSuffix(v, base64HeaderSuffix) &&
		len(v) >= len(base64HeaderPrefix)+len(base64HeaderSuffix)
}

// refusal is a 400 error answer to msg.
func refusal(msg *jsonrpc.Message, code int64, text string) *wire.Error {
	return &wire.Error{Status: http.StatusBadRequest, Code: code, ID: msg.ID, Message: text}
}

// unsupported refuses msg's protocol version, naming those it may use.
func unsupported(msg *jsonrpc.Message, text string, supported []string, requested string) *wire.Error {
	he := refusal(msg, CodeUnsupportedVersion, text)
	he.Data = map[string]any{"supported": supported, "requested": requested}
	return he
}

// strictError is the answer to a field the strict reader refused: 400, with the codes the
// core's field reader gives.
func strictError(msg *jsonrpc.Message, err error) *wire.Error {
	var te *jsonrpc.TypeError
	if errors.As(err, &te) {
		return refusal(msg, jsonrpc.CodeInvalidParams, te.Error())
	}
	return refusal(msg, jsonrpc.CodeInvalidRequest, err.Error())
}

// LegacyOnly guards GET and DELETE, which exist only for legacy sessions: one without a
// session id that names 2026-07-28 or later is 405.
func LegacyOnly(next http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get(HeaderSessionID) == "" && sessionlessOrLater(r.Header.Get(HeaderProtocolVersion)) {
			w.Header().Set("Allow", "POST")
			http.Error(w, "method not allowed: protocol version "+Version+" uses POST only", http.StatusMethodNotAllowed)
			return
		}
		next(w, r)
	}
}
