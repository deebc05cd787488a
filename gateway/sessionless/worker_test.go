package sessionless

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/gemgate/gemgate/jsonrpc"
)

// What would ask a worker for a task never reaches it: the task parameter and the tasks
// extension (or the 2025-11-25 tasks capability) among the client's capabilities are
// dropped, on the way to either kind of worker; the rest of the request is kept.
func TestSessionlessTaskRequestDropped(t *testing.T) {
	params := `{"name":"slow","arguments":{"n":1},"task":{"ttl":60000},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28",` +
		`"io.modelcontextprotocol/clientCapabilities":{"elicitation":{},"tasks":{},"extensions":{"io.modelcontextprotocol/tasks":{},"x.y/z":{}}},` +
		`"io.modelcontextprotocol/clientInfo":{"name":"c","version":"1"},"progressToken":3}}`
	msg := &jsonrpc.Message{ID: json.RawMessage(`1`), Method: "tools/call", Params: json.RawMessage(params)}
	pass, err := passMessage(msg, false, "")
	if err != nil {
		t.Fatal(err)
	}
	legacy, err := legacyMessage(msg)
	if err != nil {
		t.Fatal(err)
	}
	for name, m := range map[string]*jsonrpc.Message{"sessionless": pass, "legacy": legacy} {
		p := string(m.Params)
		if strings.Contains(p, `"task"`) || strings.Contains(p, `"tasks"`) || strings.Contains(p, tasksExtension) {
			t.Errorf("%s: the task request reached the worker: %s", name, p)
		}
		for _, kept := range []string{`"arguments":{"n":1}`, `"progressToken":3`} {
			if !strings.Contains(p, kept) {
				t.Errorf("%s: %s lost: %s", name, kept, p)
			}
		}
	}
	for _, kept := range []string{`"elicitation":{}`, `"x.y/z":{}`, `"io.modelcontextprotocol/clientInfo"`} {
		if !strings.Contains(string(pass.Params), kept) {
			t.Errorf("sessionless: %s lost: %s", kept, pass.Params)
		}
	}
	// A task the worker returns anyway is not handed to a client that gemgate told nothing
	// of tasks.
	for _, result := range []string{`{"resultType":"task","task":{"taskId":"t1","status":"working"}}`, `{"task":{"taskId":"t1","status":"working"}}`,
		`{"resultType":"t\u0061sk"}`} {
		if _, err := spliceResult("tools/call", json.RawMessage(result)); err == nil {
			t.Errorf("spliceResult(%s) passed a task on", result)
		}
	}
}

// A hostile client's request to a sessionless worker, through every check gemgate makes
// before passMessage: a case variant of the client capabilities' tasks (or of extensions,
// which holds the tasks extension) is let through and forwarded, although gemgate refuses a
// case variant of the task parameter itself because "a worker reading keys without regard
// to case would take a variant it let through for the real one" (bridge_resume.go). Such a
// worker then answers with a task gemgate refuses as malformed, while the tool runs on.
func TestAttackPassMessageTasksCapabilityInAnotherCase(t *testing.T) {
	for name, caps := range map[string]string{
		"Tasks":      `{"Tasks":{}}`,
		"Extensions": `{"Extensions":{"io.modelcontextprotocol/tasks":{}}}`,
	} {
		t.Run(name, func(t *testing.T) {
			body := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"slow","arguments":{},"_meta":{` +
				`"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":` + caps +
				`,"io.modelcontextprotocol/clientInfo":{"name":"c","version":"1"}}}}`
			msg, err := jsonrpc.Parse([]byte(body), jsonrpc.Options{Client: true})
			if err != nil {
				t.Fatal(err)
			}
			r := httptest.NewRequest(http.MethodPost, "/mcp", strings.NewReader(body))
			r.Header.Set(HeaderProtocolVersion, Version)
			r.Header.Set(HeaderMethod, "tools/call")
			r.Header.Set(HeaderName, "slow")
			// A refusal at any check before passMessage would be the fix: the attack ends there.
			if _, he := check(r, msg, testServed); he != nil {
				return
			}
			// (The core's field reader, which runs next, reads no client capability.)
			if _, _, err := requestStateOf(msg); err != nil {
				return
			}
			out, err := passMessage(msg, false, "")
			if err != nil {
				return // refused: holds
			}
			p := strings.ToLower(string(out.Params))
			if strings.Contains(p, `"tasks"`) || strings.Contains(p, tasksExtension) {
				t.Errorf("a case variant of the tasks capability reached the sessionless worker: %s", out.Params)
			}
		})
	}
}

// An extensions object that names the tasks extension twice is refused: the edit that drops
// the extension for the worker cannot read it, and the worker, which keeps the last of
// duplicate keys, would see a client asking for tasks.
func TestDuplicateTasksExtensionIsRefused(t *testing.T) {
	for _, ext := range []string{
		`{"` + tasksExtension + `":{},"` + tasksExtension + `":{}}`,
		`{"other":{},"` + tasksExtension + `":{}}`,
	} {
		body := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"whoami",` +
			`"_meta":{"` + MetaProtocolVersion + `":"` + Version + `",` +
			`"` + MetaClientCapabilities + `":{"extensions":` + ext + `},` +
			`"` + MetaClientInfo + `":{"name":"t","version":"1"}}}}`
		msg, err := jsonrpc.Parse([]byte(body), jsonrpc.Options{Client: true})
		if err != nil {
			t.Fatalf("parse: %v", err)
		}
		rp, err := readParams(msg)
		if err != nil {
			t.Fatalf("readParams: %v", err)
		}
		fwd, err := passMessageOf(msg, rp, false, "")
		duplicate := strings.Count(ext, tasksExtension) == 2
		switch {
		case duplicate && err == nil:
			t.Fatalf("named twice, passed on: %s", fwd.Params)
		case !duplicate && err != nil:
			t.Fatalf("named once: %v", err)
		case !duplicate:
			var p struct {
				Meta map[string]json.RawMessage `json:"_meta"`
			}
			var caps struct {
				Extensions map[string]json.RawMessage `json:"extensions"`
			}
			if err := json.Unmarshal(fwd.Params, &p); err != nil {
				t.Fatal(err)
			}
			if err := json.Unmarshal(p.Meta[MetaClientCapabilities], &caps); err != nil {
				t.Fatal(err)
			}
			if _, ok := caps.Extensions[tasksExtension]; ok || len(caps.Extensions) != 1 {
				t.Fatalf("named once: forwarded %s, want the other extension alone", fwd.Params)
			}
		}
	}
}
