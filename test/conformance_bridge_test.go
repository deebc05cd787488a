package test

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
)

// bridgeCall is a 2026-07-28 tools/call of tool, its _meta declaring caps (raw JSON), as raw
// HTTP; it returns the status and the answer's body.
func bridgeCall(t *testing.T, g *gemgate, id, tool, caps string) (int, string) {
	t.Helper()
	body := `{"jsonrpc":"2.0","id":` + id + `,"method":"tools/call","params":{"name":"` + tool + `","arguments":{},"_meta":{` +
		`"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":` + caps + `}}}`
	req := sessionlessRequest(t, g.URL, g.Tokens["alice"], []byte(body), "tools/call", tool)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// TestConformanceBridgeUndeclaredCapability: a legacy worker (stubbornworker) asks for a
// confirmation (elicitation/create) within a 2026-07-28 peek. A request that declared no
// elicitation gets 400 and MissingRequiredClientCapability (-32021) naming it, as
// requiredCapabilities {"elicitation":{}}, and the worker's question is refused (the peek
// answers with the refusal, not with a guess of gemgate's); a null member declares nothing; a
// request that declared it gets the input-required result.
func TestConformanceBridgeUndeclaredCapability(t *testing.T) {
	t.Parallel()
	g := startDev(t, "--worker-command", stubbornWorker(t), "--read-only-tools", "peek,roots")
	for i, caps := range []string{`{"sampling":{}}`, `{"elicitation":null}`} {
		code, body := bridgeCall(t, g, `"u`+string(rune('0'+i))+`"`, "peek", caps)
		var out struct {
			Error struct {
				Code int64 `json:"code"`
				Data struct {
					RequiredCapabilities map[string]json.RawMessage `json:"requiredCapabilities"`
				} `json:"data"`
			} `json:"error"`
		}
		if err := json.Unmarshal([]byte(body), &out); err != nil {
			t.Fatalf("%s: %d %s", caps, code, body)
		}
		if code != http.StatusBadRequest || out.Error.Code != -32021 || string(out.Error.Data.RequiredCapabilities["elicitation"]) != "{}" ||
			len(out.Error.Data.RequiredCapabilities) != 1 {
			t.Errorf("caps %s: %d %s; want 400, -32021 requiring {\"elicitation\":{}}", caps, code, body)
		}
	}
	code, body := bridgeCall(t, g, `"d"`, "peek", `{"elicitation":{}}`)
	if code != http.StatusOK || !strings.Contains(body, `"input_required"`) || !strings.Contains(body, `"elicitation/create"`) {
		t.Errorf("with elicitation declared: %d %s; want the input-required result", code, body)
	}
}
