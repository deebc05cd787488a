package wire

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"strconv"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/gemgate/gemgate/jsonrpc"
)

// slowConn is a response writer whose client takes perChunk to read each write, and which
// fails a write that ends past the deadline set, as a connection's would.
type slowConn struct {
	perChunk time.Duration
	deadline time.Time
	written  int
	h        http.Header
}

func (c *slowConn) Header() http.Header { return c.h }
func (c *slowConn) WriteHeader(int)     {}
func (c *slowConn) Flush()              {}
func (c *slowConn) SetWriteDeadline(t time.Time) error {
	c.deadline = t
	return nil
}
func (c *slowConn) Write(b []byte) (int, error) {
	time.Sleep(c.perChunk)
	if !c.deadline.IsZero() && time.Now().After(c.deadline) {
		return 0, os.ErrDeadlineExceeded
	}
	c.written += len(b)
	return len(b), nil
}

// WriteFlushed bounds a long write by its chunks (each within WriteTimeout) and on the
// whole (MinWriteRate past the first WriteTimeout): a client reading at 128 KiB/s gets a
// 1 MiB answer; one reading at 21 KiB/s, each chunk in time, is cut when the whole runs
// late, not after the last chunk; and a stop channel ends a long write between chunks.
func TestWriteFlushedBounds(t *testing.T) {
	body := make([]byte, 1<<20)
	synctest.Test(t, func(t *testing.T) {
		c := &slowConn{perChunk: 500 * time.Millisecond, h: http.Header{}}
		if err := WriteFlushed(http.NewResponseController(c), c, body, nil, WriteTimeout); err != nil || c.written != len(body) {
			t.Fatalf("128 KiB/s: %v after %d of %d bytes", err, c.written, len(body))
		}
	})
	synctest.Test(t, func(t *testing.T) {
		c := &slowConn{perChunk: 3 * time.Second, h: http.Header{}}
		start := time.Now()
		err := WriteFlushed(http.NewResponseController(c), c, body, nil, WriteTimeout)
		limit := WriteTimeout + time.Duration(len(body))*time.Second/MinWriteRate
		if !errors.Is(err, os.ErrDeadlineExceeded) {
			t.Fatalf("21 KiB/s: %v after %d of %d bytes, want the deadline", err, c.written, len(body))
		}
		if took := time.Since(start); took > limit+c.perChunk {
			t.Fatalf("21 KiB/s: cut after %v, the whole write's bound is %v", took, limit)
		}
	})
	synctest.Test(t, func(t *testing.T) {
		c := &slowConn{perChunk: 500 * time.Millisecond, h: http.Header{}}
		stop := make(chan struct{})
		time.AfterFunc(2*time.Second, func() { close(stop) })
		err := WriteFlushed(http.NewResponseController(c), c, body, stop, WriteTimeout)
		if !errors.Is(err, ErrWriteStopped) || c.written >= len(body) {
			t.Fatalf("stopped mid-write: %v after %d of %d bytes", err, c.written, len(body))
		}
	})
}

// TestRetryAfterRoundsUp: Retry-After is whole seconds, rounded up (a client retrying after
// the floor would come back too early), and at least 1.
func TestRetryAfterRoundsUp(t *testing.T) {
	for _, tt := range []struct {
		d    time.Duration
		want int64
	}{
		{-5 * time.Second, 1}, {0, 1}, {time.Nanosecond, 1}, {time.Second, 1},
		{time.Second + time.Nanosecond, 2}, {2500 * time.Millisecond, 3}, {3 * time.Second, 3}, {time.Minute, 60},
	} {
		if got := RetryAfterSeconds(tt.d); got != tt.want {
			t.Errorf("RetryAfterSeconds(%v) = %d, want %d", tt.d, got, tt.want)
		}
	}
}

// TestErrorAnswers: what a refused client reads. A JSON-RPC refusal is application/json with
// its length, the request's id and code; a busy gateway's 503 and a caller's 429 say when to
// come back in Retry-After and in the error's data alike; a refusal without a code is plain
// text. The cause stays in the log.
func TestErrorAnswers(t *testing.T) {
	type body struct {
		ID    json.RawMessage `json:"id"`
		Error struct {
			Code    int64          `json:"code"`
			Message string         `json:"message"`
			Data    map[string]any `json:"data"`
		} `json:"error"`
	}
	cause := errors.New("pool: 100 workers starting")
	for _, tt := range []struct {
		name       string
		e          *Error
		status     int
		code       int64
		retryAfter string
	}{
		{"overloaded", Overloaded(json.RawMessage(`7`), "busy", 2500*time.Millisecond, cause), http.StatusServiceUnavailable, jsonrpc.CodeInternalError, "3"},
		{"too many", TooManyRequests(json.RawMessage(`7`), "slow down", 0), http.StatusTooManyRequests, jsonrpc.CodeInternalError, "1"},
		{"bad request", BadRequest("no"), http.StatusBadRequest, jsonrpc.CodeInvalidRequest, ""},
		{"session not found", SessionNotFound(json.RawMessage(`7`)), http.StatusNotFound, jsonrpc.CodeInvalidRequest, ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			rec := httptest.NewRecorder()
			tt.e.Write(rec)
			res := rec.Result()
			if res.StatusCode != tt.status || res.Header.Get("Content-Type") != "application/json" ||
				res.Header.Get("Content-Length") != strconv.Itoa(rec.Body.Len()) || res.Header.Get("Retry-After") != tt.retryAfter {
				t.Errorf("status %d, headers %v; want %d, application/json with its length, Retry-After %q", res.StatusCode, res.Header, tt.status, tt.retryAfter)
			}
			var b body
			if err := json.Unmarshal(rec.Body.Bytes(), &b); err != nil {
				t.Fatalf("%s: %v", rec.Body, err)
			}
			if b.Error.Code != tt.code || b.Error.Message != tt.e.Message || strings.Contains(rec.Body.String(), "pool:") {
				t.Errorf("body %s: want code %d, message %q, no cause", rec.Body, tt.code, tt.e.Message)
			}
			if tt.e.ID != nil && string(b.ID) != "7" {
				t.Errorf("id %s, want 7", b.ID)
			}
			if ra := b.Error.Data["retryAfter"]; tt.retryAfter != "" && fmt.Sprint(ra) != tt.retryAfter {
				t.Errorf("data.retryAfter %v, want %s", ra, tt.retryAfter)
			}
		})
	}
	if got := Overloaded(nil, "busy", time.Second, cause).Error(); got != "busy: pool: 100 workers starting" {
		t.Errorf("Error() = %q, want the message and its cause", got)
	}
	if got := BadRequest("no").Error(); got != "no" {
		t.Errorf("Error() = %q, want the message", got)
	}

	rec := httptest.NewRecorder()
	(&Error{Status: http.StatusRequestEntityTooLarge, Message: "body too large"}).Write(rec)
	if rec.Code != http.StatusRequestEntityTooLarge || !strings.HasPrefix(rec.Header().Get("Content-Type"), "text/plain") || rec.Body.String() != "body too large\n" {
		t.Errorf("plain refusal: %d %q %q", rec.Code, rec.Header().Get("Content-Type"), rec.Body)
	}
}

// TestWriteBodyWritesItWhole: an answer is written whole with its length, small ones and
// those past net/http's buffer alike.
func TestWriteBodyWritesItWhole(t *testing.T) {
	for _, n := range []int{10, directAnswer - 1, directAnswer, 3 * WriteChunk} {
		body := bytes.Repeat([]byte("x"), n)
		rec := httptest.NewRecorder()
		WriteBody(rec, http.StatusAccepted, body)
		if rec.Code != http.StatusAccepted || !bytes.Equal(rec.Body.Bytes(), body) || rec.Header().Get("Content-Length") != strconv.Itoa(n) {
			t.Errorf("%d bytes: status %d, %d bytes written, Content-Length %q", n, rec.Code, rec.Body.Len(), rec.Header().Get("Content-Length"))
		}
	}
}

// TestStatusRecorder: the status logged is the one the client got: the first written, 200
// when the handler only wrote a body or nothing.
func TestStatusRecorder(t *testing.T) {
	r := &StatusRecorder{ResponseWriter: httptest.NewRecorder()}
	if r.Status() != http.StatusOK {
		t.Errorf("nothing written: %d, want 200", r.Status())
	}
	r.WriteHeader(http.StatusNotFound)
	r.WriteHeader(http.StatusInternalServerError) // superfluous: net/http ignores it
	if r.Status() != http.StatusNotFound {
		t.Errorf("404 then 500: %d, want 404", r.Status())
	}
	r = &StatusRecorder{ResponseWriter: httptest.NewRecorder()}
	_, _ = r.Write([]byte("x"))
	r.WriteHeader(http.StatusTeapot)
	if r.Status() != http.StatusOK {
		t.Errorf("a body, then 418: %d, want 200", r.Status())
	}
}

// TestWriteBodyBoundsALargeAnswer: an answer larger than net/http buffers is written within the
// write bounds (WriteFlushed): a client reading 21 KiB/s does not get a 1 MiB answer, and does
// not hold the handler past the bound.
func TestWriteBodyBoundsALargeAnswer(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := &slowConn{perChunk: 3 * time.Second, h: http.Header{}}
		body := make([]byte, 1<<20)
		start := time.Now()
		WriteBodyWithin(c, http.StatusOK, body, WriteTimeout)
		limit := WriteTimeout + time.Duration(len(body))*time.Second/MinWriteRate
		if c.written >= len(body) || time.Since(start) > limit+c.perChunk {
			t.Errorf("21 KiB/s: %d of %d bytes written in %v, want it cut within %v", c.written, len(body), time.Since(start), limit)
		}
	})
}
