package policy

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"unicode/utf8"

	"github.com/go-json-experiment/json/jsontext"
)

// ErrMalformedList is wrapped by every error FilterList returns.
var ErrMalformedList = errors.New("policy: malformed list result")

// listShape is how a list result names its array and, in each item, what rules decide on.
type listShape struct {
	method, array, key, plural string
	kind                       Kind
}

// listShapes are the lists gemgate filters. Only a tool has annotations that gemgate reads.
var listShapes = [...]listShape{
	{"tools/list", "tools", "name", "tools", KindTool},
	{"prompts/list", "prompts", "name", "prompts", KindPrompt},
	{"resources/list", "resources", "uri", "resources", KindResource},
	{"resources/templates/list", "resourceTemplates", "uriTemplate", "resource templates", KindResource},
}

// shapeOf is the shape of the list method answers; false for any other method.
func shapeOf(method string) (*listShape, bool) {
	for i := range listShapes {
		if listShapes[i].method == method {
			return &listShapes[i], true
		}
	}
	return nil, false
}

// Filters reports whether the answer to method is a list FilterList filters: tools/list,
// prompts/list, resources/list or resources/templates/list.
func Filters(method string) bool {
	_, ok := shapeOf(method)
	return ok
}

// toolsList locates the array of a list result (tools, prompts, resources or resource
// templates) and each item in it, as byte ranges of the input.
type toolsList struct {
	start, end int // the tools array, brackets included
	tools      []listedTool
	metaAt     int // offset of the '{' of the result's _meta; 0 without one, -1 when not an object
}

type listedTool struct {
	start, end int    // the item's object, braces included
	name       string // a tool's or prompt's name, a resource's URI, a template's URI template
	hints      *Hints // the four annotations, defaults where absent or null; nil without any
}

// parseList checks the syntax, then walks the structure with the jsontext tokenizer.
// The walk records byte ranges, so kept bytes stay exact, and reads keys exactly:
// encoding/json matches struct fields case-insensitively, so {"name":"a","Name":"b"}
// would be "b" to gemgate and "a" to most clients. Keys that differ from the array's
// ("tools"), the item's key ("name", "uri") and, for tools, "annotations" or "readOnlyHint"
// only in case, and repeats of those keys, are refused as ambiguous; other keys are not
// gemgate's to judge.
func parseList(b []byte, shape *listShape) (toolsList, error) {
	var l toolsList
	if !jsontext.Value(b).IsValid(lenient...) {
		return l, malformed("invalid JSON")
	}
	// Ill-formed UTF-8 inside strings is valid JSON to encoding/json, and readers repair it
	// differently (encoding/json makes U+FFFD, others refuse), so a name is read one way here
	// and another by the client.
	if !utf8.Valid(b) {
		return l, malformed("not valid UTF-8")
	}
	w := walker{d: jsontext.NewDecoder(bytes.NewBuffer(b), lenient...), b: b, shape: shape}
	found := false
	err := w.object("result", func(key []byte) error {
		if !bytes.EqualFold(key, []byte(shape.array)) {
			if string(key) == "_meta" && l.metaAt == 0 {
				l.metaAt = w.next()
				if w.d.PeekKind() != '{' {
					l.metaAt = -1
				}
			}
			return w.d.SkipValue()
		}
		if string(key) != shape.array || found {
			return malformed("ambiguous key %q", key)
		}
		found = true
		l.start = w.next()
		var err error
		l.tools, err = w.tools()
		l.end = int(w.d.InputOffset())
		return err
	})
	if err != nil {
		return l, err
	}
	if !found {
		return l, malformed("no %s array", shape.array)
	}
	return l, nil
}

// lenient reads JSON as encoding/json's Valid does: repeated keys and ill-formed UTF-8 are
// for the walk and the check above to judge.
var lenient = []jsontext.Options{jsontext.AllowDuplicateNames(true), jsontext.AllowInvalidUTF8(true)}

// walker reads JSON the tokenizer has validated, so it checks shapes, not syntax.
type walker struct {
	d     *jsontext.Decoder
	b     []byte
	shape *listShape
}

// next is the offset where the next token starts.
func (w *walker) next() int {
	i := int(w.d.InputOffset())
	for i < len(w.b) && bytes.IndexByte([]byte(" \t\r\n,:"), w.b[i]) >= 0 {
		i++
	}
	return i
}

// str reads a string (a key or a value) and returns its decoded contents, aliasing the
// input when it has no escapes.
func (w *walker) str() ([]byte, error) {
	v, err := w.d.ReadValue()
	if err != nil {
		return nil, malformed("%v", err)
	}
	if inner := v[1 : len(v)-1]; bytes.IndexByte(inner, '\\') < 0 {
		return inner, nil
	}
	// A lone surrogate escape reads as U+FFFD, as encoding/json reads it; the error that
	// reports it is not a refusal.
	s, _ := jsontext.AppendUnquote(nil, v)
	return s, nil
}

// object reads an object, calling field for each key with the decoder at the value; field
// must consume the value.
func (w *walker) object(what string, field func(key []byte) error) error {
	if w.d.PeekKind() != '{' {
		return malformed("%s is not an object", what)
	}
	if _, err := w.d.ReadToken(); err != nil {
		return malformed("%v", err)
	}
	for w.d.PeekKind() != '}' {
		key, err := w.str()
		if err != nil {
			return err
		}
		if err := field(key); err != nil {
			return err
		}
	}
	_, err := w.d.ReadToken()
	return err
}

func (w *walker) tools() ([]listedTool, error) {
	if w.d.PeekKind() != '[' {
		return nil, malformed("%s is not an array", w.shape.array)
	}
	if _, err := w.d.ReadToken(); err != nil {
		return nil, malformed("%v", err)
	}
	var tools []listedTool
	for w.d.PeekKind() != ']' {
		t := listedTool{start: w.next()}
		if err := w.tool(&t); err != nil {
			return nil, fmt.Errorf("%w (%s %d)", err, w.shape.kind, len(tools))
		}
		t.end = int(w.d.InputOffset())
		tools = append(tools, t)
	}
	_, err := w.d.ReadToken()
	return tools, err
}

func (w *walker) tool(t *listedTool) error {
	hasName, hasAnnotations := false, false
	err := w.object(w.shape.kind.String(), func(key []byte) error {
		switch {
		case bytes.EqualFold(key, []byte(w.shape.key)):
			if string(key) != w.shape.key || hasName {
				return malformed("ambiguous key %q", key)
			}
			hasName = true
			if w.d.PeekKind() != '"' {
				return malformed("%s %s is not a string", w.shape.kind, w.shape.key)
			}
			name, err := w.str()
			t.name = string(name)
			return err
		case w.shape.kind == KindTool && bytes.EqualFold(key, []byte("annotations")):
			if string(key) != "annotations" || hasAnnotations {
				return malformed("ambiguous key %q", key)
			}
			hasAnnotations = true
			return w.annotations(t)
		}
		return w.d.SkipValue()
	})
	if err != nil {
		return err
	}
	if t.name == "" {
		return malformed("%s without a %s", w.shape.kind, w.shape.key)
	}
	return nil
}

func (w *walker) annotations(t *listedTool) error {
	if w.d.PeekKind() == 'n' {
		return w.d.SkipValue()
	}
	var seen [len(annotationNames)]bool
	h := defaultHints
	err := w.object("annotations", func(key []byte) error {
		i := slices.IndexFunc(annotationNames[:], func(n string) bool { return bytes.EqualFold(key, []byte(n)) })
		if i < 0 {
			return w.d.SkipValue()
		}
		if string(key) != annotationNames[i] || seen[i] {
			return malformed("ambiguous key %q", key)
		}
		seen[i] = true
		switch w.d.PeekKind() {
		case 't', 'f':
			*h.field(i) = w.d.PeekKind() == 't'
			t.hints = &h
		case 'n':
		default:
			return malformed("%s is not a boolean", annotationNames[i])
		}
		return w.d.SkipValue()
	})
	return err
}

func malformed(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrMalformedList, fmt.Sprintf(format, args...))
}

// ListNames lists what rules decide on of every item of result, the result object of the
// list method's response (tools/list, prompts/list, resources/list,
// resources/templates/list): names, URIs or URI templates, read as strictly as FilterList
// reads them; and, of a tool list, the hints FilterList returns.
func ListNames(method string, result json.RawMessage) ([]string, map[string]Hints, error) {
	shape, ok := shapeOf(method)
	if !ok {
		return nil, nil, malformed("%s is not a list gemgate reads", method)
	}
	list, err := parseList(result, shape)
	if err != nil {
		return nil, nil, err
	}
	names := make([]string, len(list.tools))
	for i, t := range list.tools {
		names[i] = t.name
	}
	return names, listHints(list.tools), nil
}
