package gateway

import (
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
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
			var he *httpError
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
