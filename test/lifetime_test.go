package test

// Helpers for the session-lifetime and server-initiated-message tests: a raw Streamable
// HTTP client that shows the wire (ids, which stream a message travels on), and readers for
// gemgate's JSON log and its Prometheus metrics. Every name here starts with "lt" so that
// the files of other test authors in this package cannot collide with it.

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"
)

// ltVersion is the protocol revision the raw client speaks.
const ltVersion = "2025-11-25"

// ltMsg is one JSON-RPC message as the raw client sees it (decoded only).
type ltMsg = rpcMessage

// ltRaw is one session opened by hand over HTTP.
type ltRaw struct {
	t            testing.TB
	url          string
	token        string
	id           string // Mcp-Session-Id
	cancelStream func() // hangs up a stream held open by ltAbandon
	hc           *http.Client
}

// ltOpen opens a session for token with the given client capabilities: initialize, then
// notifications/initialized. It fails the test on anything but success.
func ltOpen(t testing.TB, g *gemgate, token string, caps map[string]any) *ltRaw {
	t.Helper()
	s, resp, err := ltInitialize(g.URL, token, caps, http.DefaultClient)
	if err != nil {
		t.Fatalf("initialize: %v", err)
	}
	if resp.StatusCode != http.StatusOK || s.id == "" {
		t.Fatalf("initialize: status %d, session id %q", resp.StatusCode, s.id)
	}
	s.t = t
	if code := s.notify("notifications/initialized", nil); code != http.StatusAccepted {
		t.Fatalf("notifications/initialized: status %d", code)
	}
	return s
}

// ltInitialize sends initialize and returns the session (id empty when none was minted) and
// the response, whose body has been read and closed.
func ltInitialize(url, token string, caps map[string]any, hc *http.Client) (*ltRaw, *http.Response, error) {
	if caps == nil {
		caps = map[string]any{}
	}
	s := &ltRaw{url: url, token: token, hc: hc}
	body := map[string]any{"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": map[string]any{
		"protocolVersion": ltVersion, "capabilities": caps,
		"clientInfo": map[string]any{"name": "gemgate-lifetime-test", "version": "1"},
	}}
	resp, err := s.post(context.Background(), body, "application/json, text/event-stream")
	if err != nil {
		return nil, nil, err
	}
	defer resp.Body.Close()
	io.Copy(io.Discard, resp.Body)
	s.id = resp.Header.Get("Mcp-Session-Id")
	return s, resp, nil
}

func (s *ltRaw) newRequest(ctx context.Context, method string, body any) *http.Request {
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			panic(err)
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, s.url, rd)
	if err != nil {
		panic(err)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if s.token != "" {
		req.Header.Set("Authorization", "Bearer "+s.token)
	}
	if s.id != "" {
		req.Header.Set("Mcp-Session-Id", s.id)
		req.Header.Set("Mcp-Protocol-Version", ltVersion)
	}
	return req
}

// post sends one JSON-RPC message with the given Accept header.
func (s *ltRaw) post(ctx context.Context, body any, accept string) (*http.Response, error) {
	req := s.newRequest(ctx, http.MethodPost, body)
	req.Header.Set("Accept", accept)
	return s.hc.Do(req)
}

// notify sends a notification (or a response, when method is "") and returns the status.
func (s *ltRaw) notify(method string, params any) int {
	s.t.Helper()
	body := map[string]any{"jsonrpc": "2.0", "method": method}
	if params != nil {
		body["params"] = params
	}
	return s.send(body)
}

// respond answers a request the gateway sent on the session's stream.
func (s *ltRaw) respond(id json.RawMessage, result any) int {
	s.t.Helper()
	return s.send(map[string]any{"jsonrpc": "2.0", "id": id, "result": result})
}

func (s *ltRaw) send(body map[string]any) int {
	s.t.Helper()
	resp, err := s.post(context.Background(), body, "application/json, text/event-stream")
	if err != nil {
		s.t.Fatalf("POST %v: %v", body["method"], err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode
}

// call sends a request and reads its answer, JSON or SSE. It returns the answer and every
// message the POST response carried before it, and the response's Content-Type.
func (s *ltRaw) call(ctx context.Context, id any, method string, params any) (answer ltMsg, before []ltMsg, contentType string, err error) {
	body := map[string]any{"jsonrpc": "2.0", "id": id, "method": method}
	if params != nil {
		body["params"] = params
	}
	resp, err := s.post(ctx, body, "application/json, text/event-stream")
	if err != nil {
		return answer, nil, "", err
	}
	defer resp.Body.Close()
	contentType = resp.Header.Get("Content-Type")
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		return answer, nil, contentType, fmt.Errorf("%s: status %d: %s", method, resp.StatusCode, b)
	}
	if !strings.HasPrefix(contentType, "text/event-stream") {
		err = json.NewDecoder(resp.Body).Decode(&answer)
		return answer, nil, contentType, err
	}
	for m := range ltEvents(resp.Body) {
		if m.Method == "" && len(m.ID) > 0 {
			return m, before, contentType, nil
		}
		before = append(before, m)
	}
	return answer, before, contentType, fmt.Errorf("%s: SSE response ended without an answer", method)
}

// tool calls a tool and fails the test unless it gets a result.
func (s *ltRaw) tool(name string, args map[string]any) json.RawMessage {
	s.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	m, _, _, err := s.call(ctx, "t-"+name, "tools/call", map[string]any{"name": name, "arguments": args})
	if err != nil {
		s.t.Fatalf("tools/call %s: %v", name, err)
	}
	if m.Error != nil {
		s.t.Fatalf("tools/call %s: error %d %s", name, m.Error.Code, m.Error.Message)
	}
	return m.Result
}

// stream opens the session's GET stream. Messages arrive on the channel, which is closed
// when the stream ends; cancel the context to hang up.
func (s *ltRaw) stream(ctx context.Context) (*http.Response, <-chan ltMsg) {
	s.t.Helper()
	req := s.newRequest(ctx, http.MethodGet, nil)
	req.Header.Set("Accept", "text/event-stream")
	resp, err := s.hc.Do(req)
	if err != nil {
		s.t.Fatalf("GET stream: %v", err)
	}
	if resp.StatusCode != http.StatusOK {
		resp.Body.Close()
		s.t.Fatalf("GET stream: status %d", resp.StatusCode)
	}
	ch := make(chan ltMsg, 1024)
	go func() {
		defer close(ch)
		defer resp.Body.Close()
		for m := range ltEvents(resp.Body) {
			select {
			case ch <- m:
			default: // a test that stopped listening must not stall the reader
			}
		}
	}()
	return resp, ch
}

// delete ends the session with DELETE and returns the status.
func (s *ltRaw) delete() int {
	req := s.newRequest(context.Background(), http.MethodDelete, nil)
	resp, err := s.hc.Do(req)
	if err != nil {
		return 0
	}
	resp.Body.Close()
	return resp.StatusCode
}

// ltEvents yields the JSON-RPC messages of an SSE body; comments and keepalives are skipped.
func ltEvents(r io.Reader) func(yield func(ltMsg) bool) {
	return func(yield func(ltMsg) bool) {
		sc := bufio.NewScanner(r)
		sc.Buffer(nil, 32<<20)
		var data []string
		for sc.Scan() {
			line := sc.Text()
			switch {
			case line == "":
				if len(data) > 0 {
					var m ltMsg
					if json.Unmarshal([]byte(strings.Join(data, "\n")), &m) == nil {
						if !yield(m) {
							return
						}
					}
					data = data[:0]
				}
			case strings.HasPrefix(line, "data:"):
				data = append(data, strings.TrimPrefix(strings.TrimPrefix(line, "data:"), " "))
			}
		}
	}
}

// ltNext waits for the first message on ch that match accepts.
func ltNext(t testing.TB, ch <-chan ltMsg, within time.Duration, what string, match func(ltMsg) bool) ltMsg {
	t.Helper()
	deadline := time.After(within)
	for {
		select {
		case m, ok := <-ch:
			if !ok {
				t.Fatalf("stream ended while waiting for %s", what)
			}
			if match(m) {
				return m
			}
		case <-deadline:
			t.Fatalf("no %s within %v", what, within)
		}
	}
}

// ltLog is gemgate's JSON log as records.
func ltLog(g *gemgate) []map[string]any {
	var out []map[string]any
	for _, line := range strings.Split(g.logs.String(), "\n") {
		var rec map[string]any
		if json.Unmarshal([]byte(line), &rec) == nil {
			out = append(out, rec)
		}
	}
	return out
}

// ltEndReason is the reason gemgate logged for the end of session id, or "".
func ltEndReason(g *gemgate, id string) string {
	for _, rec := range ltLog(g) {
		if rec["msg"] == "session ended" && rec["session"] == id {
			r, _ := rec["reason"].(string)
			return r
		}
	}
	return ""
}

// ltWorkerPID is the pid of session id's worker, from the "session opened" log line.
func ltWorkerPID(t testing.TB, g *gemgate, id string) int {
	t.Helper()
	var pid int
	pollUntil(t, 10*time.Second, "a \"session opened\" log line with a pid for session "+id, func() bool {
		for _, rec := range ltLog(g) {
			if p, ok := rec["pid"].(float64); ok && rec["msg"] == "session opened" && rec["session"] == id {
				pid = int(p)
				return true
			}
		}
		return false
	})
	return pid
}

// ltWaitLog waits until gemgate has logged a line containing substr.
func ltWaitLog(t testing.TB, g *gemgate, substr string, within time.Duration) {
	t.Helper()
	if !logShows(g, substr, within) {
		t.Fatalf("gemgate did not log %q within %v", substr, within)
	}
}

// logShows reports whether gemgate logs substr within the given time. Its log reaches the
// harness through a pipe, so a line written before an answer may arrive after it.
func logShows(g *gemgate, substr string, within time.Duration) bool {
	deadline := time.Now().Add(within)
	for !strings.Contains(g.logs.String(), substr) {
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(20 * time.Millisecond)
	}
	return true
}

// ltWaitGone waits until pid has exited and returns how long that took.
func ltWaitGone(t testing.TB, pid int, within time.Duration) time.Duration {
	t.Helper()
	start := time.Now()
	for time.Since(start) < within {
		if !alive(pid) {
			return time.Since(start)
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("worker %d still running after %v", pid, within)
	return 0
}

// ltMetricsClient never reuses connections, so scraping adds no lasting goroutine to gemgate.
var ltMetricsClient = &http.Client{Transport: &http.Transport{DisableKeepAlives: true}, Timeout: 10 * time.Second}

// ltMetrics scrapes gemgate's metrics: series ("name" or "name{labels}") to value.
func ltMetrics(t testing.TB, g *gemgate) map[string]float64 {
	t.Helper()
	if g.Metrics == "" {
		t.Fatal("gemgate has no metrics listener; start it with --metrics-listen 127.0.0.1:0")
	}
	resp, err := ltMetricsClient.Get(g.Metrics)
	if err != nil {
		t.Fatalf("metrics: %v", err)
	}
	defer resp.Body.Close()
	out := map[string]float64{}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || line[0] == '#' {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		if i < 0 {
			continue
		}
		v, err := strconv.ParseFloat(line[i+1:], 64)
		if err == nil {
			out[line[:i]] = v
		}
	}
	return out
}

// ltSum adds every series of the metric name.
func ltSum(m map[string]float64, name string) float64 {
	var sum float64
	for k, v := range m {
		if k == name || strings.HasPrefix(k, name+"{") {
			sum += v
		}
	}
	return sum
}
