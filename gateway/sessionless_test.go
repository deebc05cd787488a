package gateway

import (
	"bufio"
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/gemgate/gemgate/gateway/sessionless"
	"github.com/gemgate/gemgate/jsonrpc"
	"github.com/gemgate/gemgate/pool"
)

// sessionlessMeta is the _meta a 2026-07-28 client sends with every request.
func sessionlessMeta() map[string]any {
	return map[string]any{
		sessionless.MetaProtocolVersion:    sessionless.Version,
		sessionless.MetaClientCapabilities: map[string]any{},
		sessionless.MetaClientInfo:         map[string]any{"name": "test", "version": "1"},
	}
}

// sessionlessPostBody is one sessionless request: params (with _meta unless params has its own
// or is nil) and the headers a conforming client sends, which header overrides ("" deletes).
func (c *client) sessionless(id, method string, params map[string]any, header ...string) reply {
	c.f.t.Helper()
	if params == nil {
		params = map[string]any{}
	}
	if _, ok := params["_meta"]; !ok {
		params["_meta"] = sessionlessMeta()
	}
	body, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": json.RawMessage(id), "method": method, "params": params})
	if err != nil {
		c.f.t.Fatal(err)
	}
	h := []string{sessionless.HeaderProtocolVersion, sessionless.Version, sessionless.HeaderMethod, method}
	if name, ok := params["name"].(string); ok {
		h = append(h, sessionless.HeaderName, name)
	}
	if uri, ok := params["uri"].(string); ok {
		h = append(h, sessionless.HeaderName, uri)
	}
	return c.post(string(body), append(h, header...)...)
}

func newSessionlessFixture(t *testing.T) *fixture {
	return newFixture(t, func(o *Options) { o.Pool = pool.Settings{WorkerPer: pool.PerUser} })
}

// perUserMode is a newFixture mod: one worker per user, playing the test worker mode.
func perUserMode(t *testing.T, mode string) func(*Options) {
	return func(o *Options) {
		o.Pool = pool.Settings{WorkerPer: pool.PerUser}
		o.Workers = &testLauncher{mode: mode, dataDir: t.TempDir()}
	}
}

// Each rule of a sessionless request's checks, with the spec's status and code, and the request
// id kept in every error.
func TestSessionlessRequestChecks(t *testing.T) {
	f := newSessionlessFixture(t)
	c := f.client("alice-rw")
	meta := func(drop string, set ...any) map[string]any {
		m := sessionlessMeta()
		delete(m, drop)
		for i := 0; i+1 < len(set); i += 2 {
			m[set[i].(string)] = set[i+1]
		}
		return m
	}
	tests := []struct {
		name   string
		method string
		params map[string]any
		header []string
		status int
		code   int64
	}{
		{"missing _meta", "server/discover", map[string]any{"_meta": nil}, nil, 400, jsonrpc.CodeInvalidParams},
		{"missing protocolVersion", "server/discover", map[string]any{"_meta": meta(sessionless.MetaProtocolVersion)}, nil, 400, jsonrpc.CodeInvalidParams},
		{"missing clientCapabilities", "server/discover", map[string]any{"_meta": meta(sessionless.MetaClientCapabilities)}, nil, 400, jsonrpc.CodeInvalidParams},
		{"clientCapabilities not an object", "server/discover", map[string]any{"_meta": meta("", sessionless.MetaClientCapabilities, "x")}, nil, 400, jsonrpc.CodeInvalidParams},
		{"clientInfo not an object", "server/discover", map[string]any{"_meta": meta("", sessionless.MetaClientInfo, 3)}, nil, 400, jsonrpc.CodeInvalidParams},
		{"header missing", "server/discover", nil, []string{sessionless.HeaderProtocolVersion, ""}, 400, sessionless.CodeHeaderMismatch},
		{"header differs from _meta", "server/discover", map[string]any{"_meta": meta("", sessionless.MetaProtocolVersion, "v999.0.0")}, nil, 400, sessionless.CodeHeaderMismatch},
		{"unsupported version", "server/discover", map[string]any{"_meta": meta("", sessionless.MetaProtocolVersion, "v999.0.0")}, []string{sessionless.HeaderProtocolVersion, "v999.0.0"}, 400, sessionless.CodeUnsupportedVersion},
		{"initialize removed", "initialize", nil, nil, 404, jsonrpc.CodeMethodNotFound},
		{"ping removed", "ping", nil, nil, 404, jsonrpc.CodeMethodNotFound},
		{"logging/setLevel removed", "logging/setLevel", nil, nil, 404, jsonrpc.CodeMethodNotFound},
		{"resources/subscribe removed", "resources/subscribe", map[string]any{"uri": "x"}, nil, 404, jsonrpc.CodeMethodNotFound},
		{"unknown method", "unknown/method", nil, nil, 404, jsonrpc.CodeMethodNotFound},
		{"Mcp-Method missing", "tools/list", nil, []string{sessionless.HeaderMethod, ""}, 400, sessionless.CodeHeaderMismatch},
		{"Mcp-Method differs", "tools/list", nil, []string{sessionless.HeaderMethod, "prompts/list"}, 400, sessionless.CodeHeaderMismatch},
		{"Mcp-Name missing", "tools/call", map[string]any{"name": "whoami"}, []string{sessionless.HeaderName, ""}, 400, sessionless.CodeHeaderMismatch},
		// The header may name a read-only tool while the body calls a mutating one: refused
		// before the policy ever looks.
		{"Mcp-Name differs", "tools/call", map[string]any{"name": "delete_note", "arguments": map[string]any{}}, []string{sessionless.HeaderName, "whoami"}, 400, sessionless.CodeHeaderMismatch},
		{"Mcp-Name base64 differs", "tools/call", map[string]any{"name": "delete_note"}, []string{sessionless.HeaderName, "=?base64?d2hvYW1p?="}, 400, sessionless.CodeHeaderMismatch},
		{"Mcp-Name bad base64", "tools/call", map[string]any{"name": "whoami"}, []string{sessionless.HeaderName, "=?base64?***?="}, 400, sessionless.CodeHeaderMismatch},
		{"_meta key in another case", "server/discover", map[string]any{"_meta": meta("", "io.modelcontextprotocol/ProtocolVersion", "x")}, nil, 400, jsonrpc.CodeInvalidRequest},
	}
	for i, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			id := json.RawMessage(strings.Repeat("1", i+1))
			r := c.sessionless(string(id), tc.method, tc.params, tc.header...)
			if r.status != tc.status {
				t.Fatalf("status %d, want %d: %s", r.status, tc.status, r.body)
			}
			m := r.only(t)
			if e := rpcError(t, m); e.Code != tc.code {
				t.Errorf("code %d, want %d: %s", e.Code, tc.code, r.body)
			}
			if string(m.ID) != string(id) {
				t.Errorf("id %s, want %s", m.ID, id)
			}
		})
	}
	if n := workersRunning(t, f); n != 0 {
		t.Errorf("%d workers started for refused requests, want 0", n)
	}
}

// The unsupported-version error lists what gemgate serves and echoes what was asked.
func TestSessionlessUnsupportedVersionData(t *testing.T) {
	f := newSessionlessFixture(t)
	m := sessionlessMeta()
	m[sessionless.MetaProtocolVersion] = "v999.0.0"
	r := f.client("alice-rw").sessionless("7", "server/discover", map[string]any{"_meta": m}, sessionless.HeaderProtocolVersion, "v999.0.0")
	var e struct {
		Data struct {
			Supported []string `json:"supported"`
			Requested string   `json:"requested"`
		} `json:"data"`
	}
	if err := json.Unmarshal(r.only(t).Error, &e); err != nil {
		t.Fatal(err)
	}
	if e.Data.Requested != "v999.0.0" || len(e.Data.Supported) == 0 || e.Data.Supported[0] != sessionless.Version {
		t.Errorf("data %+v", e.Data)
	}
}

// server/discover for a worker gemgate initialized: gemgate's versions, the worker's
// capabilities and serverInfo, private.
func TestSessionlessDiscover(t *testing.T) {
	f := newSessionlessFixture(t)
	r := f.client("alice-rw").sessionless("1", "server/discover", nil)
	if r.status != http.StatusOK {
		t.Fatalf("status %d: %s", r.status, r.body)
	}
	var res struct {
		SupportedVersions []string                   `json:"supportedVersions"`
		Capabilities      map[string]json.RawMessage `json:"capabilities"`
		Meta              map[string]struct {
			Name string `json:"name"`
		} `json:"_meta"`
		ResultType string `json:"resultType"`
		CacheScope string `json:"cacheScope"`
		TTLMs      *int   `json:"ttlMs"`
	}
	if err := json.Unmarshal(r.only(t).Result, &res); err != nil {
		t.Fatal(err)
	}
	if len(res.SupportedVersions) == 0 || res.SupportedVersions[0] != sessionless.Version {
		t.Errorf("supportedVersions %v", res.SupportedVersions)
	}
	if _, ok := res.Capabilities["tools"]; !ok {
		t.Errorf("capabilities %v lack the worker's tools", res.Capabilities)
	}
	if res.Meta[sessionless.MetaServerInfo].Name == "" || res.ResultType != "complete" || res.CacheScope != "private" || res.TTLMs == nil {
		t.Errorf("discover result %s", r.only(t).Result)
	}
}

// A read-only caller's tools/list is filtered and private; its mutating call is refused with
// the same 403 challenge as a legacy session's; a read-write caller's call works, and the
// results say resultType complete.
func TestSessionlessPolicyAndResults(t *testing.T) {
	f := newSessionlessFixture(t)
	ro, rw := f.client("alice-ro"), f.client("alice-rw")
	r := ro.sessionless("1", "tools/list", nil)
	var list struct {
		Tools []struct {
			Name string `json:"name"`
		} `json:"tools"`
		CacheScope string `json:"cacheScope"`
		ResultType string `json:"resultType"`
	}
	if err := json.Unmarshal(r.only(t).Result, &list); err != nil {
		t.Fatal(err)
	}
	for _, tool := range list.Tools {
		for _, bad := range mutatingDemoTools {
			if tool.Name == bad {
				t.Errorf("read-only list has %s", bad)
			}
		}
	}
	if len(list.Tools) == 0 || list.CacheScope != "private" || list.ResultType != "complete" {
		t.Errorf("tools/list %s", r.body)
	}
	r = ro.sessionless("2", "tools/call", map[string]any{"name": "delete_note", "arguments": map[string]any{"id": "x"}})
	if r.status != http.StatusForbidden || !strings.Contains(r.header.Get("WWW-Authenticate"), "insufficient_scope") {
		t.Errorf("read-only delete_note: %d %v %s", r.status, r.header, r.body)
	}
	r = rw.sessionless("3", "tools/call", map[string]any{"name": "echo", "arguments": map[string]any{"text": "hi"}})
	if r.status != http.StatusOK || toolText(t, r.only(t)) != "hi" {
		t.Fatalf("echo: %d %s", r.status, r.body)
	}
	if !strings.Contains(string(r.only(t).Result), `"resultType":"complete"`) {
		t.Errorf("no resultType in %s", r.only(t).Result)
	}
	r = rw.sessionless("4", "tools/call", map[string]any{"name": "no_such_tool", "arguments": map[string]any{}})
	_ = r // the worker's own answer; only that it does not hang matters here
}

// A sessionless and a legacy client of the same user and access mode share one worker when the
// worker program speaks no 2026-07-28 (gemgate bridges).
func TestSessionlessSharesTheUsersWorker(t *testing.T) {
	f := newFixture(t, func(o *Options) {
		o.Pool = pool.Settings{WorkerPer: pool.PerUser}
		o.Workers = &testLauncher{mode: "legacydemo", dataDir: t.TempDir()}
	})
	legacy := f.client("alice-rw")
	legacy.open()
	pid := legacy.sessionObj().member.WorkerPid()
	r := f.client("alice-rw").sessionless("1", "tools/call", map[string]any{"name": "whoami", "arguments": map[string]any{}})
	if r.status != http.StatusOK || r.only(t).Error != nil {
		t.Fatalf("sessionless whoami: %d %s", r.status, r.body)
	}
	if n := workersRunning(t, f); n != 1 {
		t.Errorf("%d workers, want the one alice's legacy session uses (pid %d)", n, pid)
	}
	if r := legacy.callTool("2", "whoami", map[string]any{}); r.only(t).Error != nil {
		t.Fatalf("legacy after sessionless: %s", r.body)
	}
}

// A worker program that speaks 2026-07-28 itself (the demo, a go-sdk v1.8.0 server) serves a
// user's sessionless requests on a sessionless worker of its own, which gemgate never initializes:
// its input-required results reach the client as the worker wrote them (its own input key),
// where on gemgate's legacy session with it the go-sdk would have turned them into an
// elicitation request that gemgate bridges under a key of its own. The legacy session keeps
// its worker.
func TestSessionlessWorkerGetsSessionlessRequests(t *testing.T) {
	f := newSessionlessFixture(t)
	legacy := f.client("alice-rw")
	legacy.open()
	c := f.client("alice-rw")
	if r := c.sessionless("1", "tools/call", map[string]any{"name": "write_note", "arguments": map[string]any{"name": "n", "text": "x"}}); r.only(t).Error != nil {
		t.Fatalf("write_note: %s", r.body)
	}
	meta := sessionlessMeta()
	meta[sessionless.MetaClientCapabilities] = map[string]any{"elicitation": map[string]any{}}
	r := c.sessionless("2", "tools/call", map[string]any{"name": "delete_note", "arguments": map[string]any{"name": "n"}, "_meta": meta})
	var res struct {
		ResultType    string                     `json:"resultType"`
		InputRequests map[string]json.RawMessage `json:"inputRequests"`
	}
	if err := json.Unmarshal(r.only(t).Result, &res); err != nil || res.ResultType != "input_required" || res.InputRequests["confirm_delete"] == nil {
		t.Fatalf("delete_note: %s, want the worker's own input key confirm_delete", r.body)
	}
	meta2 := sessionlessMeta()
	meta2[sessionless.MetaClientCapabilities] = map[string]any{"elicitation": map[string]any{}}
	r = c.sessionless("3", "tools/call", map[string]any{"name": "delete_note", "arguments": map[string]any{"name": "n"}, "_meta": meta2,
		"inputResponses": map[string]any{"confirm_delete": map[string]any{"action": "accept", "content": map[string]any{}}}})
	if r.status != http.StatusOK || !strings.Contains(toolText(t, r.only(t)), "deleted") {
		t.Fatalf("retry: %d %s", r.status, r.body)
	}
	if n := workersRunning(t, f); n != 2 {
		t.Errorf("%d workers, want alice's legacy one and her sessionless one", n)
	}
	started := 0
	for _, rec := range f.log.records(t) {
		if rec["msg"] == "worker started" && rec["protocol_version"] == sessionless.Version {
			started++
		}
	}
	if started != 1 {
		t.Errorf("%d sessionless workers started, want 1", started)
	}
	if r := legacy.callTool("4", "whoami", map[string]any{}); r.only(t).Error != nil {
		t.Fatalf("legacy after sessionless: %s", r.body)
	}
}

// GET and DELETE without a session that name 2026-07-28 are 405; a legacy GET without a
// session is refused as before.
func TestSessionlessGetDelete405(t *testing.T) {
	f := newSessionlessFixture(t)
	c := f.client("alice-rw")
	for _, m := range []string{http.MethodGet, http.MethodDelete} {
		r := c.refused(t, m+" naming 2026-07-28", m, "", sessionless.HeaderProtocolVersion, sessionless.Version)
		if r.status != http.StatusMethodNotAllowed {
			t.Errorf("%s: %d, want 405", m, r.status)
		}
		r = c.refused(t, "legacy "+m+" without a session", m, "")
		if r.status == http.StatusMethodNotAllowed {
			t.Errorf("legacy %s without a session: 405", m)
		}
	}
}

// subscriptions/listen: acknowledged first, then the worker's tools/list_changed tagged with
// the listen request's id.
func TestSessionlessListen(t *testing.T) {
	f := newSessionlessFixture(t)
	c := f.client("alice-rw")
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	open := func(id string, filter map[string]any) *bufio.Reader {
		body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": json.RawMessage(id), "method": "subscriptions/listen",
			"params": map[string]any{"_meta": sessionlessMeta(), "notifications": filter}})
		resp := c.postStreaming(ctx, string(body), sessionless.HeaderProtocolVersion, sessionless.Version, sessionless.HeaderMethod, "subscriptions/listen")
		t.Cleanup(func() { resp.Body.Close() })
		if resp.StatusCode != http.StatusOK || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
			t.Fatalf("listen: %d %s", resp.StatusCode, resp.Header.Get("Content-Type"))
		}
		return bufio.NewReader(resp.Body)
	}
	next := func(rd *bufio.Reader) *jsonrpc.Message {
		for {
			line, err := rd.ReadString('\n')
			if err != nil {
				t.Fatalf("listen stream ended: %v", err)
			}
			if data, ok := strings.CutPrefix(strings.TrimRight(line, "\r\n"), "data: "); ok {
				m, err := jsonrpc.Parse([]byte(data), jsonrpc.Options{})
				if err != nil {
					t.Fatal(err)
				}
				return m
			}
		}
	}
	tools := open(`"L1"`, map[string]any{"toolsListChanged": true})
	prompts := open(`"L2"`, map[string]any{"promptsListChanged": true})
	for _, rd := range []*bufio.Reader{tools, prompts} {
		if m := next(rd); m.Method != "notifications/subscriptions/acknowledged" {
			t.Fatalf("first message %s, want acknowledged", m.Encode())
		}
	}
	if r := c.sessionless("5", "tools/call", map[string]any{"name": "toggle_extra_tool", "arguments": map[string]any{}}); r.only(t).Error != nil {
		t.Fatalf("toggle: %s", r.body)
	}
	m := next(tools)
	if m.Method != "notifications/tools/list_changed" || !strings.Contains(string(m.Params), `"`+sessionless.MetaSubscriptionID+`":"L1"`) {
		t.Fatalf("got %s", m.Encode())
	}
}

// A worker is sessionless when it answers the version probe with a -32022 that lists
// 2026-07-28 (the demo, a go-sdk v1.8.0 server); a legacy one is not. Either way it is
// initialized, and legacy sessions keep working on it.
func TestSessionlessWorkerDetection(t *testing.T) {
	for _, tc := range []struct {
		mode        string
		sessionless bool
	}{{"demo", true}, {"legacyfake", false}} {
		t.Run(tc.mode, func(t *testing.T) {
			f := newFixture(t, func(o *Options) {
				o.Pool = pool.Settings{WorkerPer: pool.PerUser}
				o.Workers = &testLauncher{mode: tc.mode, dataDir: t.TempDir()}
			})
			c := f.client("alice-rw")
			if r := c.open(); r.status != http.StatusOK {
				t.Fatalf("initialize: %d %s", r.status, r.body)
			}
			got, found := false, false
			for _, rec := range f.log.records(t) {
				if rec["msg"] == "worker started" {
					got, found = rec["sessionless"] == true, true
				}
			}
			if !found || got != tc.sessionless {
				t.Errorf("worker started: found %v, sessionless %v, want %v", found, got, tc.sessionless)
			}
			if r := f.client("alice-rw").sessionless("1", "server/discover", nil); r.status != http.StatusOK || r.only(t).Error != nil {
				t.Errorf("discover: %d %s", r.status, r.body)
			}
		})
	}
}

// A parked call whose retry never comes ends after InputRequiredTimeout: the worker's request
// gets an error, the parked call is gone (a late retry is told to start again), and the
// worker serves the next call.
func TestSessionlessInputRequiredTimeout(t *testing.T) {
	f := newFixture(t, func(o *Options) {
		o.Pool = pool.Settings{WorkerPer: pool.PerUser}
		o.Workers = &testLauncher{mode: "legacydemo", dataDir: t.TempDir()}
		o.InputRequiredTimeout = 200 * time.Millisecond
	})
	// The requestState's expiry (whole seconds) is read by a clock that stands still: on a
	// loaded machine the retry below may come more than a second after the park, and is then
	// refused as expired before the parked call is looked for.
	frozen := time.Now()
	f.gw.sessionless.Now = func() time.Time { return frozen }
	c := f.client("alice-rw")
	meta := sessionlessMeta()
	meta[sessionless.MetaClientCapabilities] = map[string]any{"elicitation": map[string]any{}}
	if r := c.sessionless("1", "tools/call", map[string]any{"name": "write_note", "arguments": map[string]any{"name": "n", "text": "x"}}); r.only(t).Error != nil {
		t.Fatalf("write_note: %s", r.body)
	}
	r := c.sessionless("2", "tools/call", map[string]any{"name": "delete_note", "arguments": map[string]any{"name": "n"}, "_meta": meta})
	var res struct {
		ResultType    string                     `json:"resultType"`
		InputRequests map[string]json.RawMessage `json:"inputRequests"`
		RequestState  string                     `json:"requestState"`
	}
	if err := json.Unmarshal(r.only(t).Result, &res); err != nil || res.ResultType != "input_required" {
		t.Fatalf("delete_note: %s", r.body)
	}
	var key string
	for k := range res.InputRequests {
		key = k
	}
	eventually(t, 10*time.Second, "the parked call to time out", func() bool {
		return f.gw.sessionless.Parked() == 0
	})
	meta2 := sessionlessMeta()
	meta2[sessionless.MetaClientCapabilities] = map[string]any{"elicitation": map[string]any{}}
	r = c.sessionless("3", "tools/call", map[string]any{"name": "delete_note", "arguments": map[string]any{"name": "n"}, "_meta": meta2,
		"inputResponses": map[string]any{key: map[string]any{"action": "accept", "content": map[string]any{}}}, "requestState": res.RequestState})
	if r.status != http.StatusBadRequest || !strings.Contains(string(r.body), "no waiting call") {
		t.Errorf("late retry: %d %s", r.status, r.body)
	}
	if r := c.sessionless("4", "tools/call", map[string]any{"name": "whoami", "arguments": map[string]any{}}); r.status != http.StatusOK || r.only(t).Error != nil {
		t.Errorf("after the timeout: %d %s", r.status, r.body)
	}
}

// A retry of a parked call whose inputResponses is not an object is refused and changes
// nothing: the call stays parked, and a retry that can be read finishes it. (Read after the
// call was taken from the park table, the refusal used to leave it with nobody to answer the
// worker's question or end it.)
func TestSessionlessUnreadableRetryLeavesTheCallParked(t *testing.T) {
	f := newFixture(t, func(o *Options) {
		o.Pool = pool.Settings{WorkerPer: pool.PerUser}
		o.Workers = &testLauncher{mode: "legacydemo", dataDir: t.TempDir()}
	})
	c := f.client("alice-rw")
	state, responses := parkDeleteNote(t, c)
	r := c.sessionless("3", "tools/call", map[string]any{"name": "delete_note", "arguments": map[string]any{"name": "n"}, "_meta": elicitingMeta(),
		"inputResponses": "accept", "requestState": state})
	if r.status != http.StatusBadRequest || !strings.Contains(string(r.body), "inputResponses") {
		t.Fatalf("retry with a string for inputResponses: %d %s, want 400 naming inputResponses", r.status, r.body)
	}
	if n := f.gw.sessionless.Parked(); n != 1 {
		t.Fatalf("%d parked calls after the unreadable retry, want 1", n)
	}
	r = c.sessionless("4", "tools/call", map[string]any{"name": "delete_note", "arguments": map[string]any{"name": "n"}, "_meta": elicitingMeta(),
		"inputResponses": responses, "requestState": state})
	if r.status != http.StatusOK || r.only(t).Error != nil || isToolError(r.only(t).Result) {
		t.Fatalf("retry after the unreadable one: %d %s", r.status, r.body)
	}
	if r := c.sessionless("5", "tools/call", map[string]any{"name": "read_note", "arguments": map[string]any{"name": "n"}}); r.only(t).Error != nil || !isToolError(r.only(t).Result) {
		t.Errorf("the note is still there after the call finished: %s", r.body)
	}
}
