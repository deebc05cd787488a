package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"sync"
	"testing"
)

// The test binary doubles as the worker: with RELAYFLOOR_TEST_WORKER=1 it answers each
// request line with its own id and params, after a notification of its own (which the relay
// must drop).
func TestMain(m *testing.M) {
	if os.Getenv("RELAYFLOOR_TEST_WORKER") == "1" {
		echoWorker()
		return
	}
	os.Exit(m.Run())
}

func echoWorker() {
	in := bufio.NewScanner(os.Stdin)
	in.Buffer(nil, 1<<20)
	out := bufio.NewWriter(os.Stdout)
	for in.Scan() {
		var req struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
			Params json.RawMessage `json:"params"`
		}
		if json.Unmarshal(in.Bytes(), &req) != nil || req.ID == nil {
			continue
		}
		result := req.Params
		if req.Method == "initialize" {
			result = json.RawMessage(`{"protocolVersion":"2025-06-18","capabilities":{"tools":{}},"serverInfo":{"name":"echo","version":"1"}}`)
		}
		fmt.Fprintf(out, `{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"x"}}`+"\n")
		fmt.Fprintf(out, `{"jsonrpc":"2.0","id":%s,"result":%s}`+"\n", req.ID, result)
		out.Flush()
	}
}

// Sessions whose JSON-RPC ids overlap each get their own answers back, with their own ids.
func TestRelaysEachAnswerToItsCaller(t *testing.T) {
	t.Setenv("RELAYFLOOR_TEST_WORKER", "1")
	r, err := start([]string{os.Args[0]})
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /mcp", r.post)
	srv := httptest.NewServer(mux)
	defer srv.Close()

	post := func(sid, body string) (*http.Response, []byte) {
		req, _ := http.NewRequest(http.MethodPost, srv.URL+"/mcp", bytes.NewBufferString(body))
		if sid != "" {
			req.Header.Set("Mcp-Session-Id", sid)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Error(err)
			return nil, nil
		}
		defer resp.Body.Close()
		var b bytes.Buffer
		b.ReadFrom(resp.Body)
		return resp, b.Bytes()
	}

	if resp, _ := post("nope", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{}}`); resp == nil || resp.StatusCode != http.StatusNotFound {
		t.Fatalf("a call with an unknown session: %v, want 404", resp)
	}
	var wg sync.WaitGroup
	for s := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			resp, b := post("", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}`)
			sid := resp.Header.Get("Mcp-Session-Id")
			if sid == "" || !bytes.Contains(b, []byte(`"serverInfo"`)) {
				t.Errorf("initialize: session %q, answer %s", sid, b)
				return
			}
			for i := range 25 {
				text := fmt.Sprintf("s%d-c%d", s, i)
				_, b := post(sid, fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"text":%q}}`, i, text))
				var a struct {
					ID     int `json:"id"`
					Result struct{ Text string }
				}
				if err := json.Unmarshal(b, &a); err != nil || a.ID != i || a.Result.Text != text {
					t.Errorf("call %d of session %d: %s", i, s, b)
				}
			}
		}()
	}
	wg.Wait()
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.pending) != 0 {
		t.Errorf("%d calls still pending after all were answered", len(r.pending))
	}
}
