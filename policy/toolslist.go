package policy

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"unicode/utf8"

	"github.com/gemgate/gemgate/jsonrpc"
)

// ErrMalformedToolsList is wrapped by every error FilterToolsList returns.
var ErrMalformedToolsList = errors.New("policy: malformed tools/list result")

// toolsList locates the tools array of a tools/list result and each tool in it, as byte
// ranges of the input.
type toolsList struct {
	start, end int // the tools array, brackets included
	tools      []listedTool
}

type listedTool struct {
	start, end int // the tool object, braces included
	name       string
	hint       *bool // annotations.readOnlyHint, nil when absent or null
}

// parseToolsList checks the syntax with json.Valid and then walks the structure by hand.
// The walk records byte ranges, so kept bytes stay exact, and reads keys exactly:
// encoding/json matches struct fields case-insensitively, so {"name":"a","Name":"b"}
// would be "b" to gemgate and "a" to most clients. Keys that differ from "tools", "name",
// "annotations" or "readOnlyHint" only in case, and repeats of those keys, are refused as
// ambiguous. (A walk with encoding/json's Decoder.Token took twice the time and 45 times
// the allocations.)
func parseToolsList(b []byte) (toolsList, error) {
	var l toolsList
	if !json.Valid(b) {
		return l, malformed("invalid JSON")
	}
	// json.Valid accepts ill-formed UTF-8 inside strings, and readers repair it differently
	// (encoding/json makes U+FFFD, others refuse), so a name is read one way here and
	// another by the client.
	if !utf8.Valid(b) {
		return l, malformed("not valid UTF-8")
	}
	w := walker{b: b}
	found := false
	err := w.object("result", func(key []byte) error {
		if !bytes.EqualFold(key, []byte("tools")) {
			w.skip()
			return nil
		}
		if string(key) != "tools" || found {
			return malformed("ambiguous key %q", key)
		}
		found = true
		l.start = w.i
		var err error
		l.tools, err = w.tools()
		l.end = w.i
		return err
	})
	if err != nil {
		return l, err
	}
	if !found {
		return l, malformed("no tools array")
	}
	return l, nil
}

// walker reads JSON that json.Valid has accepted, so it checks shapes, not syntax.
type walker struct {
	b []byte
	i int
}

func (w *walker) space() { w.i = jsonrpc.SkipSpace(w.b, w.i) }

// object reads an object at w.i, calling field for each key with w.i at the value; field
// must consume the value. The key may alias the input.
func (w *walker) object(what string, field func(key []byte) error) error {
	w.space()
	if w.b[w.i] != '{' {
		return malformed("%s is not an object", what)
	}
	w.i++
	w.space()
	if w.b[w.i] == '}' {
		w.i++
		return nil
	}
	for {
		w.space()
		key, err := w.str()
		if err != nil {
			return err
		}
		w.space()
		w.i++ // ':'
		w.space()
		if err := field(key); err != nil {
			return err
		}
		w.space()
		c := w.b[w.i]
		w.i++
		if c == '}' {
			return nil
		}
	}
}

func (w *walker) tools() ([]listedTool, error) {
	if w.b[w.i] != '[' {
		return nil, malformed("tools is not an array")
	}
	w.i++
	var tools []listedTool
	for {
		w.space()
		if w.b[w.i] == ']' {
			w.i++
			return tools, nil
		}
		if w.b[w.i] == ',' {
			w.i++
			w.space()
		}
		t := listedTool{start: w.i}
		if err := w.tool(&t); err != nil {
			return nil, fmt.Errorf("%w (tool %d)", err, len(tools))
		}
		t.end = w.i
		tools = append(tools, t)
	}
}

func (w *walker) tool(t *listedTool) error {
	hasName, hasAnnotations := false, false
	err := w.object("tool", func(key []byte) error {
		switch {
		case bytes.EqualFold(key, []byte("name")):
			if string(key) != "name" || hasName {
				return malformed("ambiguous key %q", key)
			}
			hasName = true
			if w.b[w.i] != '"' {
				return malformed("tool name is not a string")
			}
			name, err := w.str()
			if err != nil {
				return err
			}
			t.name = string(name)
		case bytes.EqualFold(key, []byte("annotations")):
			if string(key) != "annotations" || hasAnnotations {
				return malformed("ambiguous key %q", key)
			}
			hasAnnotations = true
			return w.annotations(t)
		default:
			w.skip()
		}
		return nil
	})
	if err != nil {
		return err
	}
	if t.name == "" {
		return malformed("tool without a name")
	}
	return nil
}

func (w *walker) annotations(t *listedTool) error {
	if w.literal("null") {
		return nil
	}
	seen := false
	return w.object("annotations", func(key []byte) error {
		if !bytes.EqualFold(key, []byte("readOnlyHint")) {
			w.skip()
			return nil
		}
		if string(key) != "readOnlyHint" || seen {
			return malformed("ambiguous key %q", key)
		}
		seen = true
		switch {
		case w.literal("true"):
			t.hint = new(true)
		case w.literal("false"):
			t.hint = new(false)
		case w.literal("null"):
		default:
			return malformed("readOnlyHint is not a boolean")
		}
		return nil
	})
}

// literal consumes lit if it is next. After json.Valid, a value starting with lit's bytes
// is lit.
func (w *walker) literal(lit string) bool {
	if bytes.HasPrefix(w.b[w.i:], []byte(lit)) {
		w.i += len(lit)
		return true
	}
	return false
}

// str reads a string at w.i and returns its decoded contents, aliasing the input when it
// has no escapes.
func (w *walker) str() ([]byte, error) {
	start := w.i
	w.i = jsonrpc.SkipValue(w.b, w.i)
	raw := w.b[start+1 : w.i-1]
	if bytes.IndexByte(raw, '\\') < 0 {
		return raw, nil
	}
	var s string
	if err := json.Unmarshal(w.b[start:w.i], &s); err != nil {
		return nil, malformed("%v", err)
	}
	return []byte(s), nil
}

// skip consumes one value.
func (w *walker) skip() { w.i = jsonrpc.SkipValue(w.b, w.i) }

func malformed(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrMalformedToolsList, fmt.Sprintf(format, args...))
}

// ToolNames lists the name of every tool in result, the result object of a tools/list
// response, read as strictly as FilterToolsList reads it.
func ToolNames(result json.RawMessage) ([]string, error) {
	list, err := parseToolsList(result)
	if err != nil {
		return nil, err
	}
	names := make([]string, len(list.tools))
	for i, t := range list.tools {
		names[i] = t.name
	}
	return names, nil
}
