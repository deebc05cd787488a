package gateway

import (
	"context"
	"net/http"
	"testing"
	"time"
)

// A POST carries JSON and accepts JSON or SSE, as the Streamable HTTP transport says: any
// other body is 415, an Accept that allows neither is 406. No Accept at all allows anything.
func TestPostContentTypeAndAccept(t *testing.T) {
	f := newFixture(t)
	c := f.client("alice-rw")
	c.open()
	ping := rpcBody("7", "ping", map[string]any{})
	tests := []struct {
		name   string
		header []string
		want   int
	}{
		{"json", []string{"Content-Type", "application/json"}, http.StatusOK},
		{"json with charset", []string{"Content-Type", "application/json; charset=utf-8"}, http.StatusOK},
		{"json in capitals", []string{"Content-Type", "Application/JSON"}, http.StatusOK},
		{"form", []string{"Content-Type", "application/x-www-form-urlencoded"}, http.StatusUnsupportedMediaType},
		{"text", []string{"Content-Type", "text/plain"}, http.StatusUnsupportedMediaType},
		{"json lookalike", []string{"Content-Type", "application/jsonp"}, http.StatusUnsupportedMediaType},
		{"no content type", []string{"Content-Type", ""}, http.StatusUnsupportedMediaType},
		{"garbage content type", []string{"Content-Type", ";;;"}, http.StatusUnsupportedMediaType},
		{"accept json", []string{"Accept", "application/json"}, http.StatusOK},
		{"accept sse", []string{"Accept", "text/event-stream"}, http.StatusOK},
		{"accept anything", []string{"Accept", "*/*"}, http.StatusOK},
		{"accept application/*", []string{"Accept", "application/*"}, http.StatusOK},
		{"accept text/*", []string{"Accept", "text/*"}, http.StatusOK},
		{"no accept", []string{"Accept", ""}, http.StatusOK},
		{"accept html", []string{"Accept", "text/html"}, http.StatusNotAcceptable},
		{"json refused by q=0", []string{"Accept", "application/json;q=0, text/html"}, http.StatusNotAcceptable},
		{"accept xml or image", []string{"Accept", "application/xml, image/png;q=0.5"}, http.StatusNotAcceptable},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := c.post(ping, tt.header...)
			if r.status != tt.want {
				t.Errorf("status %d, want %d (body %s)", r.status, tt.want, r.body)
			}
		})
	}
}

// The GET stream is SSE: an Accept that rules it out is 406.
func TestGetAccept(t *testing.T) {
	f := newFixture(t)
	c := f.client("alice-rw")
	c.open()
	// Only the status is read: a stream that opened would never end by itself.
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	req, err := c.newRequest(ctx, http.MethodGet, nil, "Accept", "application/json")
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNotAcceptable {
		t.Errorf("GET with Accept: application/json: %d, want 406", resp.StatusCode)
	}
}
