package gateway

import (
	"bytes"
	"net/http"
	"strconv"
	"time"
)

// sseWriteTimeout bounds every write to a stream, so a client that stops reading costs a
// stream, never a goroutine parked forever.
const sseWriteTimeout = 5 * time.Second

// sse writes Server-Sent Events. Every event is flushed at once.
type sse struct {
	w       http.ResponseWriter
	rc      http.ResponseController // a value: a stream inside another struct costs no allocation
	started bool
}

func newSSE(w http.ResponseWriter) *sse {
	s := &sse{}
	s.init(w)
	return s
}

func (s *sse) init(w http.ResponseWriter) {
	s.w, s.rc = w, *http.NewResponseController(w)
}

// The values of a stream's fixed headers, shared by every stream rather than made per answer.
// net/http copies the header map when the status is written, and nothing in gemgate changes a
// value in place, so sharing them is safe; each has no spare capacity, so an Add makes a new
// slice rather than appending into the shared one.
var (
	sseContentType  = []string{mediaSSE}
	sseCacheControl = []string{"no-cache, no-transform"}
	sseNoBuffering  = []string{"no"}
)

func (s *sse) start(extra http.Header) error {
	s.header(extra)
	s.w.WriteHeader(http.StatusOK)
	s.started = true
	return s.flush()
}

func (s *sse) header(extra http.Header) {
	h := s.w.Header()
	for k, v := range extra {
		h[k] = v
	}
	h["Content-Type"] = sseContentType
	h["Cache-Control"] = sseCacheControl
	h["X-Accel-Buffering"] = sseNoBuffering // tells nginx-style proxies not to buffer the stream
}

// writeWholeStream answers with a stream of one event, msg, and no event id (a modern call's
// answer: 2026-07-28 has no resumption).
func writeWholeStream(w http.ResponseWriter, msg []byte) error {
	var s sse
	s.init(w)
	return s.whole(appendEvent(make([]byte, 0, len(msg)+24), "", msg))
}

// begin starts a stream with its first events, headers and events in one write.
func (s *sse) begin(first []byte) error {
	s.header(nil)
	s.w.WriteHeader(http.StatusOK)
	s.started = true
	return s.write(first)
}

// whole writes a stream that is complete at its start (an answer with nothing before it):
// headers and body in one write, with its length, so that neither a flush per event nor the
// chunked encoding's last chunk costs a system call of its own.
func (s *sse) whole(body []byte) error {
	s.header(nil)
	s.w.Header()["Content-Length"] = []string{strconv.Itoa(len(body))}
	s.w.WriteHeader(http.StatusOK)
	s.started = true
	return s.write(body)
}

// event writes one JSON-RPC message. Messages are single-line JSON, so one data line holds
// it; anything with a line break (CR, LF or CRLF, each of which ends an SSE line) is split
// into several data lines, which a client joins back with LF, so it can never end the event
// early or smuggle in fields of its own.
func (s *sse) event(msg []byte) error { return s.eventID("", msg) }

// eventID writes a message with an event id, so that a client can resume after it. Ids are
// gemgate's own (resume.go): they never hold a line break.
func (s *sse) eventID(id string, msg []byte) error {
	return s.write(appendEvent(make([]byte, 0, len(msg)+24+len(id)), id, msg))
}

// appendEvent appends the event that carries msg, with id unless it is empty.
//
// Line breaks are looked for with bytes.IndexByte, once for LF and once for CR, each found
// again only once the framing has passed it: a vectorised scan where IndexAny tested every
// byte against a set (8 % of a 1 MiB answer's CPU), and linear however the two interleave.
func appendEvent[ID string | []byte](buf []byte, id ID, msg []byte) []byte {
	if len(id) > 0 {
		buf = append(append(append(buf, "id: "...), id...), '\n')
	}
	buf = append(buf, "event: message\n"...)
	start := 0 // the start of the current data line
	lf, cr := indexFrom(msg, 0, '\n'), indexFrom(msg, 0, '\r')
	for lf >= 0 || cr >= 0 {
		i := lf
		if i < 0 || cr >= 0 && cr < i {
			i = cr
		}
		buf = append(append(append(buf, "data: "...), msg[start:i]...), '\n')
		start = i + 1
		if msg[i] == '\r' && lf == start { // CRLF is one line break
			start++
		}
		if lf >= 0 && lf < start {
			lf = indexFrom(msg, start, '\n')
		}
		if cr >= 0 && cr < start {
			cr = indexFrom(msg, start, '\r')
		}
	}
	buf = append(append(buf, "data: "...), msg[start:]...)
	return append(buf, "\n\n"...)
}

// indexFrom is the index in b of the first c at or after from, or -1.
func indexFrom(b []byte, from int, c byte) int {
	if i := bytes.IndexByte(b[from:], c); i >= 0 {
		return from + i
	}
	return -1
}

// prime writes the priming event: an id the client can resume from before any message has
// come, and the reconnection delay, with empty data.
func (s *sse) prime(id string, retry time.Duration) error {
	return s.write(appendPrime(nil, id, retry))
}

func appendPrime[ID string | []byte](buf []byte, id ID, retry time.Duration) []byte {
	buf = append(append(append(buf, "id: "...), id...), "\nretry: "...)
	buf = strconv.AppendInt(buf, retry.Milliseconds(), 10)
	return append(buf, "\ndata: \n\n"...)
}

func (s *sse) comment(text string) error {
	return s.write([]byte(": " + text + "\n\n"))
}

func (s *sse) write(b []byte) error {
	_ = s.rc.SetWriteDeadline(time.Now().Add(sseWriteTimeout))
	if _, err := s.w.Write(b); err != nil {
		return err
	}
	return s.flush()
}

func (s *sse) flush() error {
	err := s.rc.Flush()
	_ = s.rc.SetWriteDeadline(time.Time{})
	return err
}
