package gateway

import (
	"encoding/json"
	"net/http"
	"testing"

	"github.com/gemgate/gemgate/gateway/sessionless"
	"github.com/gemgate/gemgate/pool"
)

// A 2026-07-28 tools/call whose header does not mirror its body is audited as the strict
// reader's refusal, outcome malformed (docs/operations.md), whether the header is Mcp-Name or
// an Mcp-Param-* header bound by the tool's x-mcp-header: both are refused with -32020 for
// the same reason, a proxy in front reading another value than the worker.
func TestHeaderMismatchIsAuditedMalformed(t *testing.T) {
	for _, tc := range []struct {
		name   string
		header []string
	}{
		{"Mcp-Name", []string{"Mcp-Name", "other"}},
		{"Mcp-Param-Region", []string{"Mcp-Param-Region", "us"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, func(o *Options) {
				o.Workers = &testLauncher{mode: "numcursor", dataDir: t.TempDir()}
				o.Pool = pool.Settings{WorkerPer: pool.PerUser}
			})
			c := f.client("alice-rw")
			// The worker first, so that its tool list (the bindings) is read.
			if r := c.sessionless("1", "tools/call", map[string]any{"name": "whoami", "arguments": map[string]any{"region": "eu"}},
				"Mcp-Param-Region", "eu"); r.status != http.StatusOK {
				t.Fatalf("matching call: %d %s", r.status, r.body)
			}
			params := map[string]any{"name": "whoami", "arguments": map[string]any{"region": "eu"}, "_meta": sessionlessMeta()}
			body, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": params})
			if err != nil {
				t.Fatal(err)
			}
			h := map[string]string{sessionless.HeaderProtocolVersion: sessionless.Version, sessionless.HeaderMethod: "tools/call",
				sessionless.HeaderName: "whoami", "Mcp-Param-Region": "eu"}
			h[tc.header[0]] = tc.header[1]
			var header []string
			for k, v := range h {
				header = append(header, k, v)
			}
			r := c.post(string(body), header...)
			if r.status != http.StatusBadRequest {
				t.Fatalf("status %d, want 400: %s", r.status, r.body)
			}
			_, vals := auditLines(t, f)
			if len(vals) != 2 {
				t.Fatalf("%d audit lines, want 2:\n%s", len(vals), f.log.String())
			}
			if got := vals[1]["outcome"]; got != "malformed" {
				t.Errorf("audit outcome %v, want malformed: %v", got, vals[1])
			}
		})
	}
}

// A 2026-07-28 tools/call whose params the strict reader refuses is audited with outcome
// malformed, whichever key it trips on: a case variant of requestState, or a requestState that
// is no string, as a case variant of arguments, or arguments that are no object.
func TestStrictParamsRefusalsAreAuditedMalformed(t *testing.T) {
	for _, params := range []map[string]any{
		{"name": "whoami", "Arguments": map[string]any{}},
		{"name": "whoami", "arguments": 5},
		{"name": "whoami", "arguments": map[string]any{}, "RequestState": "x"},
		{"name": "whoami", "arguments": map[string]any{}, "requestState": 5},
	} {
		f := newSessionlessFixture(t)
		if r := f.client("alice-rw").sessionless("1", "tools/call", params); r.status != http.StatusBadRequest {
			t.Fatalf("%v: status %d, want 400: %s", params, r.status, r.body)
		}
		_, vals := auditLines(t, f)
		if len(vals) != 1 || vals[0]["outcome"] != "malformed" {
			t.Errorf("%v: audit lines %v, want one, outcome malformed", params, vals)
		}
	}
}

// A tools/call in a protocol version gemgate does not serve is audited alike in both eras:
// outcome refused, with why (turned away before its tool was weighed), as a 2026-07-28 one
// refused for a worker that needs sessions is; not malformed in one era and refused in the
// other: its params are not what the strict reader refused.
func TestUnsupportedVersionIsAuditedAlikeInBothEras(t *testing.T) {
	outcome := func(f *fixture, r reply) any {
		t.Helper()
		if r.status != http.StatusBadRequest {
			t.Fatalf("status %d, want 400: %s", r.status, r.body)
		}
		_, vals := auditLines(t, f)
		if len(vals) != 1 {
			t.Fatalf("audit lines %v, want one", vals)
		}
		return vals[0]["outcome"]
	}
	params := map[string]any{"name": "whoami", "arguments": map[string]any{}}
	f := newSessionlessFixture(t)
	c := f.client("alice-rw")
	c.open()
	body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": params})
	session := outcome(f, c.post(string(body), "Mcp-Session-Id", c.session, sessionless.HeaderProtocolVersion, "2099-01-01"))

	f = newSessionlessFixture(t)
	meta := sessionlessMeta()
	meta[sessionless.MetaProtocolVersion] = "2099-01-01"
	params["_meta"] = meta
	body, _ = json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": params})
	modern := outcome(f, f.client("alice-rw").post(string(body), sessionless.HeaderProtocolVersion, "2099-01-01",
		sessionless.HeaderMethod, "tools/call", sessionless.HeaderName, "whoami"))
	if session != "refused" || modern != "refused" {
		t.Errorf("audit outcome of an unsupported version: %v in a session, %v sessionless; want refused in both", session, modern)
	}
}
