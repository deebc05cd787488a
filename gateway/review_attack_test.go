package gateway

import (
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"

	"github.com/gemgate/gemgate/gateway/wire"
)

// A Content-Length is the client's word, and max_body_bytes may be set as high as an int64
// goes (an operator's "no limit"): a declared length at that limit must be read like any
// other (here: a short body, refused 400), not overflow the buffer's size into a panic.
func TestReviewDeclaredLengthAtInt64Limit(t *testing.T) {
	tests := []struct {
		name            string
		limit, declared int64
		body            string
		status          int // 0: read whole
	}{
		{"declared MaxInt64, limit MaxInt64", math.MaxInt64, math.MaxInt64, "abc", http.StatusBadRequest},
		{"declared MaxInt64-1, limit MaxInt64", math.MaxInt64, math.MaxInt64 - 1, "abc", http.StatusBadRequest},
		{"declared exact, limit MaxInt64", math.MaxInt64, 3, "abc", 0},
		{"declared MaxInt64, limit 4 MiB", 4 << 20, math.MaxInt64, "abc", http.StatusBadRequest},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := &Gateway{opts: Options{MaxBodyBytes: tt.limit}}
			r := httptest.NewRequest(http.MethodPost, "/mcp", nil)
			r.ContentLength = tt.declared
			r.Body = io.NopCloser(&exactReader{r: strings.NewReader(tt.body), left: tt.declared})
			body, err := readBodyNoPanic(g, r)
			if tt.status == 0 {
				if err != nil || string(body) != tt.body {
					t.Fatalf("readBody = %q, %v; want %q", body, err, tt.body)
				}
				return
			}
			var he *wire.Error
			if !errors.As(err, &he) || he.Status != tt.status {
				t.Fatalf("readBody = %d bytes, %v; want status %d", len(body), err, tt.status)
			}
		})
	}
}

// readBodyNoPanic is g.readBody, a panic turned into an error that names it.
func readBodyNoPanic(g *Gateway, r *http.Request) (body []byte, err error) {
	defer func() {
		if v := recover(); v != nil {
			body, err = nil, fmt.Errorf("readBody panicked: %v", v)
		}
	}()
	return g.readBody(httptest.NewRecorder(), r)
}

// A client's X-Request-Id goes into the gateway's log lines as it came: a hostile client can
// make each of them as large as its headers may be (a megabyte by default), or fill it with
// control bytes and the shape of another request's id. An id longer than maxClientRequestID,
// or with a byte outside visible ASCII, is not honoured: the request gets an id of the
// gateway's own. A sensible one (a UUID, a proxy's trace id) still is.
func TestReviewClientRequestIDIsBounded(t *testing.T) {
	own := regexp.MustCompile(`^[^/]+/[A-Za-z0-9]{10}-\d{6,}$`)
	tests := []struct {
		name, header string
		honoured     bool
	}{
		{"uuid", "3f2c1a9e-5b7d-4c2e-9f1a-0d8e7b6c5a43", true},
		{"at the bound", strings.Repeat("a", maxClientRequestID), true},
		{"over the bound", strings.Repeat("a", maxClientRequestID+1), false},
		{"64 KiB", strings.Repeat("b", 64<<10), false},
		{"a newline", "abc\ndef", false},
		{"an escape", "abc\x1b[2Jdef", false},
		{"a space", "abc def", false},
		{"not ASCII", "abc\u00e9def", false},
		{"DEL", "abc\x7fdef", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got string
			g := &Gateway{}
			h := g.requestInfo(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { got = requestID(r.Context()) }))
			r := httptest.NewRequest(http.MethodGet, "http://gw.test/", nil)
			r.Header["X-Request-Id"] = []string{tt.header}
			h.ServeHTTP(httptest.NewRecorder(), r)
			if tt.honoured {
				if got != tt.header {
					t.Fatalf("request id %q, want the client's %q", got, tt.header)
				}
				return
			}
			if !own.MatchString(got) {
				t.Fatalf("request id of %d bytes %.40q..., want one of the gateway's own", len(got), got)
			}
		})
	}
}
