package jsonrpc

import (
	"bytes"
	"io"
	"sync"

	"github.com/go-json-experiment/json/jsontext"
)

// The one reading of a JSON text, on the go-json-experiment jsontext tokenizer. Syntax is
// decided as encoding/json's Valid decides it, so the options allow what it allows: repeated
// names (gemgate's own rule, on the objects it reads, is stricter: see Object) and ill-formed
// UTF-8 (a client's message is checked for it whole, before). The tokenizer also tracks how
// deeply the text nests, for a client's depth limit.
var lenient = []jsontext.Options{jsontext.AllowDuplicateNames(true), jsontext.AllowInvalidUTF8(true)}

// A decoder reads from its own buffer, which wraps the text being read and nothing once done:
// a pooled decoder must not keep the last megabyte it read alive.
type decoder struct {
	d   *jsontext.Decoder
	buf bytes.Buffer
}

var decoders = sync.Pool{New: func() any {
	x := &decoder{}
	x.d = jsontext.NewDecoder(&x.buf)
	return x
}}

// withDecoder runs read with a pooled decoder on b.
func withDecoder(b []byte, read func(d *jsontext.Decoder)) {
	x := decoders.Get().(*decoder)
	defer func() {
		x.buf = bytes.Buffer{}
		x.d.Reset(&x.buf)
		decoders.Put(x)
	}()
	x.buf = *bytes.NewBuffer(b)
	x.d.Reset(&x.buf, lenient...)
	read(x.d)
}

// reader walks one JSON text. It keeps the members of the objects gemgate reads (a message's
// envelope, its params, their _meta and the objects in _meta) and only checks the rest.
type reader struct {
	d       *jsontext.Decoder
	b       []byte
	limit   int  // deepest nesting allowed; 0 for the tokenizer's own limit
	tooDeep bool // nesting went past limit
}

// readText reads b, one JSON value and white space around it, and returns its members when
// it is an object (walked says so; descend as in reader.object). err is ErrParse for any
// syntax error, wherever it is; tooDeep is reported only for syntactically valid text.
func readText(b []byte, limit int, descend int) (members []member, walked, tooDeep bool, err error) {
	withDecoder(b, func(d *jsontext.Decoder) {
		r := reader{d: d, b: b, limit: limit}
		if d.PeekKind() == '{' {
			members, err = r.object(descend)
			walked = true
		} else {
			_, err = r.value()
		}
		if err == nil {
			if _, end := d.ReadToken(); end != io.EOF {
				err = ErrParse // something follows the value
			}
		}
		tooDeep = r.tooDeep
	})
	if err != nil {
		return nil, false, false, ErrParse
	}
	return members, walked, tooDeep, nil
}

// Which members of an object reader.object reads as objects of their own, by how deep the
// object sits in a message: the envelope's params, params' _meta, and every object in _meta.
const (
	descendEnvelope = iota
	descendParams
	descendMeta
	descendNone
)

// object reads the object whose opening brace is next, and returns its members. A member's
// value that is an object is read into the member's own members too when descend says so.
func (r *reader) object(descend int) ([]member, error) {
	if _, err := r.token(); err != nil {
		return nil, err
	}
	var ms []member
	for r.d.PeekKind() != '}' {
		before := r.d.InputOffset()
		name, err := r.d.ReadToken()
		if err != nil {
			return nil, err
		}
		m := member{rawKey: trimLead(r.b[before:r.d.InputOffset()])}
		if k, ok := wellKnownStrings[string(m.rawKey[1:len(m.rawKey)-1])]; ok {
			m.key = k
		} else {
			m.key = name.String()
		}
		if r.d.PeekKind() == '{' && descends(descend, m.key) {
			start := r.d.InputOffset()
			m.members, err = r.object(descend + 1)
			m.walked = true
			m.value = trimLead(r.b[start:r.d.InputOffset()])
		} else {
			m.value, err = r.value()
		}
		if err != nil {
			return nil, err
		}
		if ms == nil {
			ms = make([]member, 0, 4) // most objects of MCP messages have at most 4 members
		}
		ms = append(ms, m)
	}
	_, err := r.d.ReadToken()
	return ms, err
}

func descends(descend int, key string) bool {
	switch descend {
	case descendEnvelope:
		return key == "params"
	case descendParams:
		return key == "_meta"
	}
	return descend == descendMeta
}

// value reads one value and returns its bytes: whole when there is no depth to watch, else
// token by token.
func (r *reader) value() ([]byte, error) {
	if r.limit == 0 {
		v, err := r.d.ReadValue()
		if err != nil {
			return nil, err
		}
		end := int(r.d.InputOffset())
		return r.b[end-len(v) : end : end], nil
	}
	start, depth := r.d.InputOffset(), r.d.StackDepth()
	for {
		if _, err := r.token(); err != nil {
			return nil, err
		}
		if r.d.StackDepth() == depth {
			return trimLead(r.b[start:r.d.InputOffset()]), nil
		}
	}
}

// token reads one token, noting nesting past the limit.
func (r *reader) token() (jsontext.Token, error) {
	t, err := r.d.ReadToken()
	if r.limit > 0 && r.d.StackDepth() > r.limit {
		r.tooDeep = true
	}
	return t, err
}

// trimLead takes off what comes before a value or a name: white space, a comma or a colon.
func trimLead(b []byte) []byte {
	i := 0
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\r' || b[i] == '\n' || b[i] == ',' || b[i] == ':') {
		i++
	}
	return b[i:len(b):len(b)]
}

// wellKnownStrings maps each of the keys and values every MCP message repeats to itself, so
// that a string read as one of them (wellKnownStrings[string(raw)], raw its bytes between the
// quotes: the lookup converts nothing) is not allocated again.
var wellKnownStrings = func() map[string]string {
	m := map[string]string{}
	for _, s := range []string{
		"jsonrpc", "2.0", "id", "method", "params", "result", "error", "code", "message", "data",
		"_meta", "name", "arguments", "content", "type", "text", "isError", "structuredContent",
		"resultType", "complete", "input_required", "progressToken", "tools/call", "version",
		"io.modelcontextprotocol/protocolVersion", "io.modelcontextprotocol/clientCapabilities",
		"io.modelcontextprotocol/clientInfo", "io.modelcontextprotocol/logLevel",
	} {
		m[s] = s
	}
	return m
}()

// EachMember calls each with the raw key (quotes included) and raw value of every member of
// obj, a JSON object, in order, on the one tokenizer and without copying or decoding them: a
// caller that looks for one member of a worker's answer learns it without decoding the whole.
// It reports false, having called each for the members before, when obj is not one JSON
// object.
func EachMember(obj []byte, each func(key, value []byte)) (ok bool) {
	withDecoder(obj, func(d *jsontext.Decoder) {
		if d.PeekKind() != '{' {
			return
		}
		if _, err := d.ReadToken(); err != nil {
			return
		}
		for d.PeekKind() != '}' {
			before := d.InputOffset()
			if _, err := d.ReadToken(); err != nil {
				return
			}
			keyEnd := d.InputOffset()
			if _, err := d.ReadValue(); err != nil {
				return
			}
			each(trimLead(obj[before:keyEnd]), trimLead(obj[keyEnd:d.InputOffset()]))
		}
		_, err := d.ReadToken()
		_, end := d.ReadToken()
		ok = err == nil && end == io.EOF
	})
	return ok
}
