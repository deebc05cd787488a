package gateway

import (
	"errors"
	"fmt"
	"github.com/gemgate/gemgate/gateway/wire"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"
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

// A worker floods a call with progress while the answer stream reads it: the reader, waking on
// the queue's token and taking what is there, receives every message, in order, and is never
// left asleep with messages queued (a lost token would leave it there until the deadline).
func TestReviewEventQueueLosesNoWakeUp(t *testing.T) {
	const n = 20000
	q := newEventQueue()
	go func() {
		for i := 0; i < n; {
			if q.push([]byte(strconv.Itoa(i)), 64) {
				i++
			} else {
				runtime.Gosched() // the reader is behind: try again, as the bound tells a sender
			}
		}
	}()
	next := 0
	deadline := time.After(30 * time.Second)
	for next < n {
		select {
		case <-q.ready:
		case <-deadline:
			t.Fatalf("reader asleep after %d of %d messages, %d queued", next, n, len(q.take()))
		}
		for _, m := range q.take() {
			if string(m) != strconv.Itoa(next) {
				t.Fatalf("message %q, want %d", m, next)
			}
			next++
		}
	}
}

// Readers of a resumable stream wait on the channel since hands them while events are
// recorded from another goroutine: each wait ends, and the events come out in order, none
// lost between the read and the wait. (The writer stays within the log's bound of events,
// resumeEvents, ahead of the reader: past it, a gap is the design.)
func TestReviewResumeWakeLosesNothing(t *testing.T) {
	rs := newResumeStore()
	sid := rs.open()
	const n = 5000
	var read atomic.Int64
	go func() {
		for i := range n {
			for int64(i)-read.Load() >= resumeEvents/2 {
				runtime.Gosched() // the reader is behind: let it catch up
			}
			rs.record(sid, []byte(strconv.Itoa(i)), i == n-1)
		}
	}()
	var after uint64
	got := 0
	deadline := time.After(30 * time.Second)
	for {
		evs, done, wake, ok := rs.since(sid, after)
		if !ok {
			t.Fatalf("the stream is gone after %d events", got)
		}
		for _, e := range evs {
			if string(e.data) != strconv.Itoa(got) {
				t.Fatalf("event %q, want %d", e.data, got)
			}
			got++
			read.Store(int64(got))
			after = e.seq
		}
		if done { // the last event is in, and was read with the rest
			break
		}
		select {
		case <-wake:
		case <-deadline:
			t.Fatalf("reader asleep after %d of %d events", got, n)
		}
	}
	if got != n {
		t.Fatalf("read %d events, want %d", got, n)
	}
}
