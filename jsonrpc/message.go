package jsonrpc

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"unicode/utf8"
)

// Message is one JSON-RPC 2.0 message as it travels through the gateway.
//
// The id is kept as its raw JSON bytes so that it can be handed back to the client exactly as
// the client wrote it: string ids, ids beyond 2^53 and fractional numbers survive, where a
// float64 round trip would not. Params, Result and Error are left raw; the gateway looks into
// them only where it must (tool names, progress tokens, the initialize result).
type Message struct {
	ID     json.RawMessage `json:"id,omitempty"`
	Method string          `json:"method,omitempty"`
	Params json.RawMessage `json:"params,omitempty"`
	Result json.RawMessage `json:"result,omitempty"`
	Error  json.RawMessage `json:"error,omitempty"`

	// params are the members of Params as Parse read them, when Params were an object
	// (paramsRead are then those bytes, paramsSum their hash). ParamsObject reuses this
	// reading only while Params are still the same bytes: an edit in place keeps address and
	// length.
	params     []member
	paramsRead json.RawMessage
	paramsSum  uint64
}

// Kinds of message, as told by which fields are present.
func (m *Message) IsRequest() bool      { return m.Method != "" && m.ID != nil }
func (m *Message) IsNotification() bool { return m.Method != "" && m.ID == nil }
func (m *Message) IsResponse() bool     { return m.Method == "" && m.ID != nil }

// ErrParse reports bytes that are not one JSON object; ErrInvalid reports a JSON object that
// is not a JSON-RPC 2.0 message. The gateway answers the first with -32700 and the second
// with -32600.
var (
	ErrParse   = errors.New("not a JSON object")
	ErrInvalid = errors.New("not a JSON-RPC 2.0 message")
)

// envelopeKeys are the members of a JSON-RPC 2.0 message. A key that differs from one of them
// only in case is refused, not ignored: encoding/json would have taken it for the member.
var envelopeKeys = []string{"jsonrpc", "id", "method", "params", "result", "error"}

// Options say how Parse reads a message.
type Options struct {
	// Client: the message is a client's. It must also be well-formed UTF-8, which JSON
	// requires and readers repair differently, and nest at most MaxDepth levels deep.
	Client bool
	// Owned: the caller hands b over. The message's fields are slices of b itself, so
	// nothing may ever write to b again. Without it the message keeps a copy of b, since
	// callers reuse their read buffers.
	Owned bool
}

// Parse decodes one JSON-RPC 2.0 message. The same reading keeps the members of its params
// and their _meta for later steps (ParamsObject). Batches are refused: no revision the
// gateway speaks allows them. The envelope is read strictly (see Object).
//
// The order of the checks matters, since the first failure decides the answer: ill-formed
// UTF-8, then JSON syntax (ErrParse), then the depth limit (ErrInvalid), then the shape.
func Parse(b []byte, opts Options) (*Message, error) {
	b = bytes.Trim(b, jsonSpace)
	if !opts.Client && (len(b) == 0 || b[0] != '{' && b[0] != '[') {
		return nil, ErrParse // not even the start of an object: no need to read on
	}
	if opts.Client && !utf8.Valid(b) {
		return nil, errNotUTF8
	}
	if !opts.Owned {
		b = bytes.Clone(b) // the members alias the message
	}
	limit := 0
	if opts.Client {
		limit = MaxDepth
	}
	members, walked, tooDeep, err := readText(b, limit, descendEnvelope)
	switch {
	case err != nil:
		return nil, err
	case tooDeep:
		return nil, errTooDeep
	case b[0] == '[':
		return nil, fmt.Errorf("%w: batches are not supported", ErrInvalid)
	case !walked:
		return nil, ErrParse
	}
	env, err := newObject("the message", members)
	if err != nil {
		return nil, err
	}
	return fromEnvelope(env)
}

// errNotUTF8 is the refusal of a client message that is not well-formed UTF-8.
var errNotUTF8 = fmt.Errorf("%w: the body is not valid UTF-8", ErrParse)

// fromEnvelope is the message whose envelope Parse read, once its shape is checked.
func fromEnvelope(env Object) (*Message, error) {
	if err := env.Exact(envelopeKeys...); err != nil {
		return nil, err
	}
	if v, _, err := env.String("jsonrpc"); err != nil || v != "2.0" {
		return nil, fmt.Errorf("%w: jsonrpc must be \"2.0\"", ErrInvalid)
	}
	m := &Message{}
	m.ID, _ = env.Raw("id")
	params := env.member("params")
	m.Params, m.params = params.value, params.members
	if params.walked {
		m.paramsRead, m.paramsSum = m.Params, hashParams(m.Params)
	}
	m.Result, _ = env.Raw("result")
	m.Error, _ = env.Raw("error")
	method, _, err := env.String("method")
	if err != nil {
		return nil, fmt.Errorf("%w: method must be a string", ErrInvalid)
	}
	m.Method = method
	if m.ID != nil && !validID(m.ID) {
		return nil, fmt.Errorf("%w: id must be a string, a number or null", ErrInvalid)
	}
	switch {
	case m.Method != "":
		if m.Result != nil || m.Error != nil {
			return nil, fmt.Errorf("%w: a request carries no result or error", ErrInvalid)
		}
		if m.ID != nil && string(m.ID) == "null" {
			return nil, fmt.Errorf("%w: a request id must not be null", ErrInvalid)
		}
	case m.ID != nil:
		if (m.Result == nil) == (m.Error == nil) {
			return nil, fmt.Errorf("%w: a response carries exactly one of result and error", ErrInvalid)
		}
	default:
		return nil, fmt.Errorf("%w: neither a method nor an id", ErrInvalid)
	}
	return m, nil
}

func validID(id json.RawMessage) bool {
	switch id[0] {
	case '"':
		return true // the tokenizer has already checked it is a well-formed string
	case 'n':
		return string(id) == "null"
	case '-', '0', '1', '2', '3', '4', '5', '6', '7', '8', '9':
		return true
	}
	return false
}

// Encode renders the message as one line of JSON without the trailing newline; the slice has
// room for that newline.
//
// The raw fields are trusted to be valid JSON, since every one comes from Parse or from
// json.Marshal. A field is compacted only when it holds a line break, which would cut the
// line in two.
func (m *Message) Encode() []byte { return m.AppendEncode(make([]byte, 0, m.EncodedLen()+1)) }

// EncodedLen is the room the message's encoding takes: exact for a plain ASCII method and
// fields without line breaks; a compacted field makes it shorter, an escaped method longer.
func (m *Message) EncodedLen() int {
	return len(`{"jsonrpc":"2.0","id":,"method":"","params":,"result":,"error":}`) + len(m.ID) + len(m.Method) +
		len(m.Params) + len(m.Result) + len(m.Error)
}

// AppendEncode appends the message's encoding (Encode's) to b.
func (m *Message) AppendEncode(b []byte) []byte {
	b = append(b, `{"jsonrpc":"2.0"`...)
	b = appendRaw(b, `,"id":`, m.ID)
	if m.Method != "" {
		b = append(b, `,"method":`...)
		b = appendString(b, m.Method)
	}
	b = appendRaw(b, `,"params":`, m.Params)
	b = appendRaw(b, `,"result":`, m.Result)
	b = appendRaw(b, `,"error":`, m.Error)
	return append(b, '}')
}

func appendRaw(b []byte, key string, raw json.RawMessage) []byte {
	if len(raw) == 0 {
		return b // omitted, as omitempty did
	}
	b = append(b, key...)
	if bytes.IndexByte(raw, '\n') < 0 && bytes.IndexByte(raw, '\r') < 0 {
		return append(b, raw...)
	}
	var buf bytes.Buffer
	if err := json.Compact(&buf, raw); err != nil {
		panic(fmt.Sprintf("jsonrpc: encoding a JSON-RPC message: %v", err))
	}
	return append(b, buf.Bytes()...)
}

// appendString appends s as a JSON string. Method names are plain ASCII; anything else takes
// the encoder's path, escaping as json.Marshal does.
func appendString(b []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c >= 0x7f || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			return append(b, mustMarshal(s, "a JSON-RPC method")...)
		}
	}
	b = append(b, '"')
	b = append(b, s...)
	return append(b, '"')
}

// Error codes the gateway uses in the answers it makes itself.
const (
	CodeParseError     = -32700
	CodeInvalidRequest = -32600
	CodeMethodNotFound = -32601
	CodeInvalidParams  = -32602
	CodeInternalError  = -32603
	CodeRequestTimeout = -32001
)

// RPCError is the error object of a JSON-RPC response.
type RPCError struct {
	Code    int64  `json:"code"`
	Message string `json:"message"`
	Data    any    `json:"data,omitempty"`
}

// ErrorResponse builds a response to the request with the given raw id carrying an error.
func ErrorResponse(id json.RawMessage, code int64, message string, data any) *Message {
	if id == nil {
		id = json.RawMessage("null")
	}
	rpcErr := RPCError{Code: code, Message: message, Data: data}
	return &Message{ID: id, Error: mustMarshal(rpcErr, "a JSON-RPC error")}
}

// Notification builds a notification with params marshalled from v; a nil v gives none (a
// params member must be an object or an array, never null).
func Notification(method string, v any) *Message {
	if v == nil {
		return &Message{Method: method}
	}
	return &Message{Method: method, Params: mustMarshal(v, "notification params")}
}

// mustMarshal is v as JSON; what gemgate encodes always encodes, so a failure is a bug.
func mustMarshal(v any, what string) json.RawMessage {
	b, err := json.Marshal(v)
	if err != nil {
		panic(fmt.Sprintf("jsonrpc: encoding %s: %v", what, err))
	}
	return b
}

// jsonSpace is the white space JSON allows around a value: space, tab, CR and LF (RFC 8259
// §2), and no other. A body wrapped in form feeds, NO-BREAK SPACEs or other Unicode spaces is
// not JSON to encoding/json, to the worker's SDK or to a proxy that reads the body, so
// gemgate must not read it as a message either.
const jsonSpace = " \t\r\n"
