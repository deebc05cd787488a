package sessionless

import (
	"context"
	"encoding/json"
	"errors"
	"math"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/gemgate/gemgate/gateway/wire"
	"github.com/gemgate/gemgate/internal/jsontext"
	"github.com/gemgate/gemgate/jsonrpc"
	"github.com/gemgate/gemgate/pool"
)

// Mcp-Param-{Name} headers (SEP-2243): a tool's input schema may mark a primitive argument
// with x-mcp-header, and a 2026-07-28 client mirrors it in a header, for proxies that route on
// it. The worker behind stdio never sees the headers, so gemgate checks them against the body,
// as the server would, with the marks of the worker's tools/list, kept a short while per
// worker. The policy never reads these headers.

const (
	ParamHeaderPrefix = "Mcp-Param-"
	paramSchemasTTL   = 30 * time.Second
	paramSchemasMax   = 1024 // workers whose schemas are kept at once
)

// paramBinding is one argument path and the header that mirrors it.
type paramBinding struct {
	path   []string
	header string
}

// paramSchemas caches, per worker, each tool's bindings; its zero value is ready.
type paramSchemas struct {
	mu      sync.Mutex
	workers map[string]paramEntry
}

type paramEntry struct {
	at    time.Time
	tools map[string][]paramBinding
}

// bindingsFrom reads a tools/list result's x-mcp-header marks.
func bindingsFrom(result json.RawMessage, into map[string][]paramBinding) {
	var list struct {
		Tools []struct {
			Name        string          `json:"name"`
			InputSchema json.RawMessage `json:"inputSchema"`
		} `json:"tools"`
	}
	if json.Unmarshal(result, &list) != nil {
		return
	}
	for _, t := range list.Tools {
		if b := schemaBindings(t.InputSchema, nil, nil); len(b) > 0 {
			into[t.Name] = b
		}
	}
}

type schemaProps struct {
	Properties map[string]struct {
		XMCPHeader json.RawMessage `json:"x-mcp-header"`
		Properties json.RawMessage `json:"properties"`
	} `json:"properties"`
}

func schemaBindings(schema json.RawMessage, prefix []string, out []paramBinding) []paramBinding {
	var s schemaProps
	if len(prefix) > 8 || json.Unmarshal(schema, &s) != nil {
		return out
	}
	for name, p := range s.Properties {
		path := append(append([]string(nil), prefix...), name)
		var h string
		if json.Unmarshal(p.XMCPHeader, &h) == nil && h != "" {
			out = append(out, paramBinding{path: path, header: h})
		}
		if len(p.Properties) > 0 {
			out = schemaBindings(json.RawMessage(`{"properties":`+string(p.Properties)+`}`), path, out)
		}
	}
	return out
}

// toolBindings are the x-mcp-header bindings of tool at m's worker; ok is false when the
// worker's list could not be read (then nothing is checked: the headers decide nothing).
func (a *Adapter) toolBindings(ctx context.Context, m *pool.Member, tool string) ([]paramBinding, bool) {
	c, now := &a.paramSchemas, time.Now()
	c.mu.Lock()
	e, ok := c.workers[m.WorkerID()]
	c.mu.Unlock()
	if ok && now.Sub(e.at) <= paramSchemasTTL {
		return e.tools[tool], true
	}
	tools := map[string][]paramBinding{}
	read := a.Steps.ToolPages(ctx, m, func(result json.RawMessage) (bool, error) {
		bindingsFrom(result, tools)
		// A nextCursor that is no string ends the list here: the bindings read so far are
		// checked, never none at all.
		var page struct {
			NextCursor string `json:"nextCursor"`
		}
		return json.Unmarshal(result, &page) != nil, nil
	})
	if !read {
		return nil, false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.workers == nil || len(c.workers) >= paramSchemasMax {
		c.workers = map[string]paramEntry{}
	}
	c.workers[m.WorkerID()] = paramEntry{at: now, tools: tools}
	return tools[tool], true
}

// checkParamHeaders compares each bound argument with its header: both absent, or equal.
func checkParamHeaders(h http.Header, msg *jsonrpc.Message, bindings []paramBinding) *wire.Error {
	var p struct {
		Arguments map[string]json.RawMessage `json:"arguments"`
	}
	_ = json.Unmarshal(msg.Params, &p)
	for _, b := range bindings {
		name := ParamHeaderPrefix + b.header
		hv := h.Get(name)
		arg, ok := lookupArg(p.Arguments, b.path)
		if err := compareParam(hv, arg, ok); err != nil {
			return refusal(msg, CodeHeaderMismatch, "the "+name+" header "+err.Error())
		}
	}
	return nil
}

func lookupArg(args map[string]json.RawMessage, path []string) (json.RawMessage, bool) {
	cur, ok := args[path[0]]
	for _, k := range path[1:] {
		if !ok {
			return nil, false
		}
		var obj map[string]json.RawMessage
		if json.Unmarshal(cur, &obj) != nil {
			return nil, false
		}
		cur, ok = obj[k]
	}
	return cur, ok
}

func compareParam(header string, arg json.RawMessage, present bool) error {
	if !present || string(arg) == "null" {
		if header != "" {
			return errors.New("is set but the argument is absent")
		}
		return nil
	}
	if header == "" {
		return errors.New("is missing")
	}
	v, err := plainHeaderValue(header)
	if err != nil {
		return err
	}
	if arg[0] == '"' && jsontext.HasLoneSurrogate(arg) {
		// encoding/json reads it as U+FFFD, a worker in JavaScript or Python keeps it: no
		// header value is the argument to both (Mcp-Name's rule, jsonrpc's Object.String).
		return errors.New("mirrors a string with a lone UTF-16 surrogate escape")
	}
	var val any
	if json.Unmarshal(arg, &val) != nil {
		return errors.New("mirrors an unreadable argument")
	}
	var match bool
	switch x := val.(type) {
	case string:
		match = v == x
	case bool:
		match = v == strconv.FormatBool(x)
	case float64:
		if x != math.Trunc(x) || math.Abs(x) > 1<<53-1 {
			return errNotPrimitive
		}
		var plain bool
		if match, plain = decimalIsInteger(v, int64(x)); !plain {
			return errors.New("is not a plain decimal number")
		}
	default:
		return errNotPrimitive
	}
	if !match {
		return errors.New("does not match the argument")
	}
	return nil
}

var errNotPrimitive = errors.New("mirrors an argument that is not an integer, string or boolean")

// decimalIsInteger reads an integer argument's header: ok only for the plain decimal form
// -?[0-9]+(\.[0-9]+)? with no leading zero before another digit (what the TypeScript SDK's
// server accepts and both SDK clients send), and eq when its value is n ("42.0" as "42").
// strconv.ParseFloat would also take "1e4", "+10000", "0x2710p0" and "010000" for 10000,
// which a proxy reads as other strings. The comparison is on the digits, exact at any length.
func decimalIsInteger(s string, n int64) (eq, ok bool) {
	neg := len(s) > 0 && s[0] == '-'
	if neg {
		s = s[1:]
	}
	whole, frac, dot := strings.Cut(s, ".")
	if !allDigits(whole) || (len(whole) > 1 && whole[0] == '0') || (dot && !allDigits(frac)) {
		return false, false
	}
	if strings.Trim(frac, "0") != "" {
		return false, true // a fraction: no integer
	}
	if n == 0 {
		return whole == "0", true // "-0" is 0 too
	}
	abs := n
	if n < 0 {
		abs = -n
	}
	return neg == (n < 0) && whole == strconv.FormatInt(abs, 10), true
}

func allDigits(s string) bool { return s != "" && strings.Trim(s, "0123456789") == "" }
