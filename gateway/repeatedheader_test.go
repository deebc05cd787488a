package gateway

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"testing"

	"github.com/gemgate/gemgate/gateway/sessionless"
	"github.com/gemgate/gemgate/jsonrpc"
)

// A header gemgate reads, given twice, is refused before anything is served: gemgate reads
// the first value, and a proxy or WAF in front that reads the last (or both joined) would
// route or filter on what gemgate never checked. Both values equal is refused too: the rule
// is one line per header. Other headers may repeat.
func TestRepeatedHeadersAreRefused(t *testing.T) {
	f := newSessionlessFixture(t)
	c := f.client("alice-rw")
	c.open()
	legacy := rpcBody("5", "tools/call", map[string]any{"name": "whoami", "arguments": map[string]any{}})
	slBody, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": "tools/call",
		"params": map[string]any{"name": "whoami", "arguments": map[string]any{}, "_meta": sessionlessMeta()}})
	send := func(t *testing.T, method, body string, set map[string]string, twice string, values ...string) (int, []byte) {
		t.Helper()
		req, err := http.NewRequest(method, f.url, bytes.NewReader([]byte(body)))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Authorization", "Bearer alice-rw")
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		for k, v := range set {
			req.Header.Set(k, v)
		}
		if twice != "" {
			req.Header.Del(twice)
			for _, v := range values {
				req.Header.Add(twice, v)
			}
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		if method == http.MethodGet && resp.StatusCode == http.StatusOK {
			return resp.StatusCode, nil // a stream: its status is the answer
		}
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, b
	}
	legacyHeaders := map[string]string{headerSessionID: c.session, sessionless.HeaderProtocolVersion: "2025-06-18"}
	sessionlessHeaders := map[string]string{sessionless.HeaderProtocolVersion: sessionless.Version, sessionless.HeaderMethod: "tools/call", sessionless.HeaderName: "whoami"}
	tests := []struct {
		name, method, body string
		set                map[string]string
		twice              string
		values             []string
		code               int64
	}{
		{"Mcp-Session-Id", http.MethodPost, legacy, legacyHeaders, headerSessionID, []string{c.session, "other"}, jsonrpc.CodeInvalidRequest},
		{"Mcp-Session-Id, both the same", http.MethodPost, legacy, legacyHeaders, headerSessionID, []string{c.session, c.session}, jsonrpc.CodeInvalidRequest},
		{"Mcp-Protocol-Version", http.MethodPost, legacy, legacyHeaders, sessionless.HeaderProtocolVersion, []string{"2025-06-18", "2025-03-26"}, jsonrpc.CodeInvalidRequest},
		{"Content-Type", http.MethodPost, legacy, legacyHeaders, "Content-Type", []string{"application/json", "text/plain"}, jsonrpc.CodeInvalidRequest},
		{"Content-Type, both the same", http.MethodPost, legacy, legacyHeaders, "Content-Type", []string{"application/json", "application/json"}, jsonrpc.CodeInvalidRequest},
		{"Last-Event-ID", http.MethodGet, "", legacyHeaders, "Last-Event-ID", []string{"1", "2"}, jsonrpc.CodeInvalidRequest},
		{"Mcp-Name", http.MethodPost, string(slBody), sessionlessHeaders, sessionless.HeaderName, []string{"whoami", "delete_note"}, sessionless.CodeHeaderMismatch},
		{"Mcp-Method", http.MethodPost, string(slBody), sessionlessHeaders, sessionless.HeaderMethod, []string{"tools/call", "tools/list"}, sessionless.CodeHeaderMismatch},
		{"Mcp-Param-*", http.MethodPost, string(slBody), sessionlessHeaders, sessionless.ParamHeaderPrefix + "Region", []string{"a", "b"}, sessionless.CodeHeaderMismatch},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			status, body := send(t, tt.method, tt.body, tt.set, tt.twice, tt.values...)
			if status != http.StatusBadRequest {
				t.Fatalf("status %d, want 400; body %.200s", status, body)
			}
			m, err := jsonrpc.Parse(body, jsonrpc.Options{})
			if err != nil || m.Error == nil {
				t.Fatalf("body %.200s is no JSON-RPC error", body)
			}
			var e struct{ Code int64 }
			if json.Unmarshal(m.Error, &e); e.Code != tt.code {
				t.Fatalf("error %s, want code %d", m.Error, tt.code)
			}
		})
	}
	// Once each, or another header repeated: served.
	for name, tt := range map[string]struct {
		body string
		set  map[string]string
	}{"legacy": {legacy, legacyHeaders}, "sessionless": {string(slBody), sessionlessHeaders}} {
		if status, body := send(t, http.MethodPost, tt.body, tt.set, "X-Trace-Note", "a", "b"); status != http.StatusOK {
			t.Fatalf("%s, each header once: status %d, body %.200s", name, status, body)
		}
	}
}
