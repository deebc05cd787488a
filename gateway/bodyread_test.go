package gateway

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"

	"github.com/gemgate/gemgate/gateway/wire"
)

// A body of declared length arrives in one buffer of its size (and one byte to see its end),
// not in chunks copied together at the end; every outcome of the read stays as it was.
func TestReadBodyDeclaredLength(t *testing.T) {
	const limit = 4 << 20
	g := &Gateway{opts: Options{MaxBodyBytes: limit}}
	tests := []struct {
		name   string
		body   io.Reader
		length int64 // the declared Content-Length; -1: none (chunked)
		want   string
		status int // 0: read whole
	}{
		{"1 MiB", strings.NewReader(strings.Repeat("x", 1<<20)), 1 << 20, strings.Repeat("x", 1<<20), 0},
		{"small", strings.NewReader(`{"a":1}`), 7, `{"a":1}`, 0},
		{"empty", strings.NewReader(""), 0, "", 0},
		{"at the limit", strings.NewReader(strings.Repeat("y", limit)), limit, strings.Repeat("y", limit), 0},
		{"chunked", strings.NewReader(strings.Repeat("z", 100<<10)), -1, strings.Repeat("z", 100<<10), 0},
		{"over the limit, declared", strings.NewReader(strings.Repeat("y", limit+1)), limit + 1, "", http.StatusRequestEntityTooLarge},
		{"over the limit, chunked", strings.NewReader(strings.Repeat("y", limit+1)), -1, "", http.StatusRequestEntityTooLarge},
		{"shorter than declared", strings.NewReader("abc"), 10, "", http.StatusBadRequest},
		{"read timeout", io.MultiReader(strings.NewReader("abc"), errReader{os.ErrDeadlineExceeded}), 10, "", http.StatusRequestTimeout},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := httptest.NewRequest(http.MethodPost, "/mcp", nil)
			r.Body, r.ContentLength = io.NopCloser(tt.body), tt.length
			if tt.length >= 0 {
				// What net/http does with a declared length: no more, and an early end is an error.
				r.Body = io.NopCloser(&exactReader{r: io.LimitReader(tt.body, tt.length), left: tt.length})
			}
			body, err := g.readBody(httptest.NewRecorder(), r)
			if tt.status != 0 {
				var he *wire.Error
				if !errors.As(err, &he) || he.Status != tt.status {
					t.Fatalf("readBody = %d bytes, %v; want status %d", len(body), err, tt.status)
				}
				return
			}
			if err != nil || string(body) != tt.want {
				t.Fatalf("readBody = %d bytes, %v; want %d bytes", len(body), err, len(tt.want))
			}
			if tt.length > 0 && cap(body) != int(tt.length)+1 {
				t.Errorf("a body of %d declared bytes came in a buffer of %d", tt.length, cap(body))
			}
		})
	}
}

// A declared length is the client's word: the buffer grows with what arrives, never more than
// bodyGrowth times ahead of it, so that a client that declares megabytes and sends a few bytes
// does not make the gateway hold megabytes.
func TestReadDeclaredGrowsWithArrival(t *testing.T) {
	for _, sent := range []int{0, 1, 1000, bodyFirstChunk, bodyFirstChunk + 1, 300 << 10, 1 << 20} {
		rec := &roomRecorder{r: strings.NewReader(strings.Repeat("x", sent)), err: os.ErrDeadlineExceeded}
		b, err := readDeclared(rec, 4<<20, 4<<20)
		if !errors.Is(err, os.ErrDeadlineExceeded) || len(b) != sent {
			t.Fatalf("sent %d: readDeclared = %d bytes, %v", sent, len(b), err)
		}
		if rec.worst != "" {
			t.Errorf("sent %d: %s", sent, rec.worst)
		}
	}
}

// roomRecorder hands out r's bytes, then err, and notes a Read offered more room than
// bodyFirstChunk, or bodyGrowth times what had arrived before it.
type roomRecorder struct {
	r     io.Reader
	err   error
	got   int
	worst string
}

func (rr *roomRecorder) Read(p []byte) (int, error) {
	if buf := rr.got + len(p); buf > max(bodyFirstChunk, bodyGrowth*rr.got) && rr.worst == "" {
		rr.worst = fmt.Sprintf("after %d bytes, the buffer held %d", rr.got, buf)
	}
	n, err := rr.r.Read(p)
	rr.got += n
	if err == io.EOF {
		return n, rr.err
	}
	return n, err
}

type errReader struct{ err error }

func (e errReader) Read([]byte) (int, error) { return 0, e.err }

// exactReader ends with io.ErrUnexpectedEOF when fewer than left bytes arrive, as net/http's
// body does for a declared length.
type exactReader struct {
	r    io.Reader
	left int64
}

func (e *exactReader) Read(p []byte) (int, error) {
	n, err := e.r.Read(p)
	e.left -= int64(n)
	if err == io.EOF && e.left > 0 {
		return n, io.ErrUnexpectedEOF
	}
	return n, err
}

// A 1 MiB body of declared length arrives in three buffers (32 KiB, 256 KiB, its own size),
// where io.ReadAll made some twenty chunks and a final copy.
func TestReadBodyFewBuffers(t *testing.T) {
	g := &Gateway{opts: Options{MaxBodyBytes: 4 << 20}}
	payload := strings.Repeat("x", 1<<20)
	src := strings.NewReader(payload)
	r := httptest.NewRequest(http.MethodPost, "/mcp", nil)
	r.Body, r.ContentLength = io.NopCloser(src), int64(len(payload))
	w := httptest.NewRecorder()
	allocs := testing.AllocsPerRun(5, func() {
		src.Reset(payload)
		if body, err := g.readBody(w, r); err != nil || len(body) != len(payload) {
			t.Fatalf("readBody = %d bytes, %v", len(body), err)
		}
	})
	if allocs > 4 { // the three buffers and the limit's reader
		t.Errorf("reading a 1 MiB body took %.0f allocations, want at most 4", allocs)
	}
}
