package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"
)

const protocolVersion = "2025-06-18"

// sessionlessVersion is the sessionless revision: no initialize, no session id; every request
// names the version in a header and in _meta, with the client's capabilities and info, and
// mirrors its method (and tool name) in Mcp-Method and Mcp-Name.
const sessionlessVersion = "2026-07-28"

var sessionlessMeta = map[string]any{
	"io.modelcontextprotocol/protocolVersion":    sessionlessVersion,
	"io.modelcontextprotocol/clientCapabilities": map[string]any{},
	"io.modelcontextprotocol/clientInfo":         map[string]any{"name": "gemgate-loadgen", "version": "1"},
}

// httpSession is one MCP session over Streamable HTTP, on a transport of its own so that
// its requests reuse one keep-alive connection.
type httpSession struct {
	url, token  string
	client      *http.Client
	tr          *http.Transport
	id          string // Mcp-Session-Id
	sessionless bool   // 2026-07-28 requests: no session
	nextID      int
	stream      *http.Response // the open GET stream, in idle mode
	// sse reads SSE answers; one per session, reset for each answer. (A reader made per
	// answer cost loadgen a 64 KiB allocation per call, which the gateways that answer in
	// SSE paid for in shared CPU.)
	sse *bufio.Reader
}

func newHTTPSession(url, token string) *httpSession {
	tr := &http.Transport{
		DialContext:         (&net.Dialer{Timeout: 10 * time.Second}).DialContext,
		MaxIdleConnsPerHost: 2,
		DisableCompression:  true,
		IdleConnTimeout:     5 * time.Minute,
	}
	return &httpSession{url: url, token: token, tr: tr, client: &http.Client{Transport: tr}}
}

func (s *httpSession) request(ctx context.Context, method string, body []byte) (*http.Request, error) {
	req, err := http.NewRequestWithContext(ctx, method, s.url, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Accept", "application/json, text/event-stream")
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if s.token != "" {
		req.Header.Set("Authorization", "Bearer "+s.token)
	}
	if s.id != "" {
		req.Header.Set("Mcp-Session-Id", s.id)
		req.Header.Set("Mcp-Protocol-Version", protocolVersion)
	}
	return req, nil
}

// rpcAnswer is the part of a JSON-RPC answer loadgen checks.
type rpcAnswer struct {
	ID     json.RawMessage `json:"id"`
	Result *struct {
		Content []struct {
			Text string `json:"text"`
		} `json:"content"`
		IsError bool `json:"isError"`
	} `json:"result"`
	Error json.RawMessage `json:"error"`
}

// call posts one request and waits for its answer, as JSON or as the matching SSE event.
func (s *httpSession) call(ctx context.Context, method string, params any) (*rpcAnswer, http.Header, error) {
	s.nextID++
	id := s.nextID
	if s.sessionless {
		p := map[string]any{"_meta": sessionlessMeta}
		for k, v := range params.(map[string]any) {
			p[k] = v
		}
		params = p
	}
	body, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": id, "method": method, "params": params})
	if err != nil {
		return nil, nil, err
	}
	req, err := s.request(ctx, http.MethodPost, body)
	if err != nil {
		return nil, nil, err
	}
	if s.sessionless {
		req.Header.Set("Mcp-Protocol-Version", sessionlessVersion)
		req.Header.Set("Mcp-Method", method)
		if name, ok := params.(map[string]any)["name"].(string); ok {
			req.Header.Set("Mcp-Name", name)
		}
	}
	resp, err := s.client.Do(req)
	if err != nil {
		return nil, nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		return nil, nil, fmt.Errorf("%s: HTTP %d: %s", method, resp.StatusCode, b)
	}
	want := strconv.Itoa(id)
	var a *rpcAnswer
	if strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		if s.sse == nil {
			s.sse = bufio.NewReaderSize(resp.Body, 64<<10)
		} else {
			s.sse.Reset(resp.Body)
		}
		a, err = readSSEAnswer(s.sse, want)
	} else {
		a = new(rpcAnswer)
		err = json.NewDecoder(resp.Body).Decode(a)
	}
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %w", method, err)
	}
	// Read to the end so the connection goes back to the pool.
	_, _ = io.Copy(io.Discard, resp.Body)
	if string(a.ID) != want {
		return nil, nil, fmt.Errorf("%s: answer id %s, want %s", method, a.ID, want)
	}
	if a.Error != nil {
		return nil, nil, fmt.Errorf("%s: JSON-RPC error %s", method, a.Error)
	}
	return a, resp.Header, nil
}

func readSSEAnswer(br *bufio.Reader, want string) (*rpcAnswer, error) {
	var data []byte
	for {
		line, err := br.ReadSlice('\n')
		if errors.Is(err, bufio.ErrBufferFull) {
			// A long data line: gather it whole. ReadSlice's bytes are the reader's buffer,
			// which the next read overwrites, so they are copied first.
			head := append([]byte(nil), line...)
			rest, err2 := br.ReadBytes('\n')
			line, err = append(head, rest...), err2
		}
		if len(line) == 0 && err != nil {
			return nil, fmt.Errorf("SSE stream ended without the answer: %w", err)
		}
		trimmed := bytes.TrimRight(line, "\r\n")
		switch {
		case bytes.HasPrefix(trimmed, []byte("data:")):
			data = append(data, bytes.TrimPrefix(bytes.TrimPrefix(trimmed, []byte("data:")), []byte(" "))...)
		case len(trimmed) == 0 && len(data) > 0:
			var a rpcAnswer
			if json.Unmarshal(data, &a) == nil && string(a.ID) == want && (a.Result != nil || a.Error != nil) {
				return &a, nil
			}
			data = data[:0]
		}
		if err != nil {
			return nil, fmt.Errorf("SSE stream ended without the answer: %w", err)
		}
	}
}

// notify posts a notification; the answer is 202 with no body.
func (s *httpSession) notify(ctx context.Context, method string) error {
	body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "method": method})
	req, err := s.request(ctx, http.MethodPost, body)
	if err != nil {
		return err
	}
	resp, err := s.client.Do(req)
	if err != nil {
		return err
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("%s: HTTP %d", method, resp.StatusCode)
	}
	return nil
}

var initParams = map[string]any{
	"protocolVersion": protocolVersion,
	"capabilities":    map[string]any{},
	"clientInfo":      map[string]any{"name": "gemgate-loadgen", "version": "1"},
}

// open sends initialize and returns how long its answer took, then notifications/initialized.
func (s *httpSession) open(ctx context.Context) (time.Duration, error) {
	if s.sessionless {
		return 0, nil // nothing to open: every request stands alone
	}
	start := time.Now()
	_, h, err := s.call(ctx, "initialize", initParams)
	took := time.Since(start)
	if err != nil {
		return 0, err
	}
	s.id = h.Get("Mcp-Session-Id")
	if s.id == "" {
		return 0, errors.New("initialize: no Mcp-Session-Id header")
	}
	return took, s.notify(ctx, "notifications/initialized")
}

// echo calls the echo tool and checks that the text came back whole.
func (s *httpSession) echo(ctx context.Context, text string) error {
	a, _, err := s.call(ctx, "tools/call", map[string]any{"name": "echo", "arguments": map[string]any{"text": text}})
	if err != nil {
		return err
	}
	return checkEcho(a, text)
}

func checkEcho(a *rpcAnswer, text string) error {
	if a.Result == nil || a.Result.IsError || len(a.Result.Content) == 0 {
		return errors.New("echo: no text content in the result")
	}
	got := a.Result.Content[0].Text
	if len(got) != len(text) {
		return fmt.Errorf("echo: %d bytes back, sent %d", len(got), len(text))
	}
	if got != text {
		return fmt.Errorf("echo: the text back differs from the text sent (%.40q against %.40q)", got, text)
	}
	return nil
}

// openStream opens the session's GET stream and waits for its response headers.
func (s *httpSession) openStream(ctx context.Context) error {
	req, err := s.request(ctx, http.MethodGet, nil)
	if err != nil {
		return err
	}
	req.Header.Set("Accept", "text/event-stream")
	resp, err := s.client.Do(req)
	if err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK {
		resp.Body.Close()
		return fmt.Errorf("GET stream: HTTP %d", resp.StatusCode)
	}
	s.stream = resp
	// Drain keepalives and events so the server never blocks on this stream.
	go func() { _, _ = io.Copy(io.Discard, resp.Body) }()
	return nil
}

// end deletes the session (best effort) and closes its connections.
func (s *httpSession) end(ctx context.Context) {
	if s.id != "" {
		if req, err := s.request(ctx, http.MethodDelete, nil); err == nil {
			if resp, err := s.client.Do(req); err == nil {
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
			}
		}
	}
	if s.stream != nil {
		s.stream.Body.Close()
	}
	s.tr.CloseIdleConnections()
}
