package wire

import (
	"bytes"
	"net/http"
	"strconv"
	"time"

	"github.com/gemgate/gemgate/jsonrpc"
)

// SSE writes Server-Sent Events, in either era: a session's GET stream, a listen stream, a
// call's answer stream. Every event is flushed at once, and every write is bounded by timeout
// (WriteFlushed).
type SSE struct {
	w       http.ResponseWriter
	rc      http.ResponseController // a value: a stream inside another struct costs no allocation
	timeout time.Duration
	// Stop, when closed, ends a long write between chunks (WriteFlushed): gemgate's shutdown.
	Stop <-chan struct{}
}

// NewSSE is a stream on w whose writes are each bounded by timeout.
func NewSSE(w http.ResponseWriter, timeout time.Duration) *SSE {
	s := &SSE{}
	s.Init(w, timeout)
	return s
}

// Init makes s, held by value in another struct, a stream on w.
func (s *SSE) Init(w http.ResponseWriter, timeout time.Duration) {
	s.w, s.rc, s.timeout = w, *http.NewResponseController(w), timeout
}

// The values of a stream's fixed headers, shared by every stream rather than made per answer.
// net/http copies the header map when the status is written, and nothing in gemgate changes a
// value in place, so sharing them is safe; each has no spare capacity, so an Add makes a new
// slice rather than appending into the shared one.
var (
	sseContentType  = []string{"text/event-stream"}
	sseCacheControl = []string{"no-cache, no-transform"}
	sseNoBuffering  = []string{"no"}
)

// Start starts the stream with its headers alone.
func (s *SSE) Start() error {
	s.writeHeader()
	return s.flush()
}

func (s *SSE) writeHeader() {
	h := s.w.Header()
	h["Content-Type"] = sseContentType
	h["Cache-Control"] = sseCacheControl
	h["X-Accel-Buffering"] = sseNoBuffering // tells nginx-style proxies not to buffer the stream
	s.w.WriteHeader(http.StatusOK)
}

// Begin starts a stream with its first events, headers and events in one write.
func (s *SSE) Begin(first []byte) error {
	s.writeHeader()
	return s.Write(first)
}

// Whole writes a stream that is complete at its start (an answer with nothing before it):
// headers and body in one write, with its length, so that neither a flush per event nor the
// chunked encoding's last chunk costs a system call of its own.
func (s *SSE) Whole(body []byte) error {
	s.w.Header()["Content-Length"] = []string{strconv.Itoa(len(body))}
	return s.Begin(body)
}

// Event writes one JSON-RPC message. Messages are single-line JSON, so one data line holds
// it; anything with a line break (CR, LF or CRLF, each of which ends an SSE line) is split
// into several data lines, which a client joins back with LF, so it can never end the event
// early or smuggle in fields of its own.
func (s *SSE) Event(msg []byte) error { return s.EventID("", msg) }

// EventID writes a message with an event id, so that a client can resume after it. Ids are
// gemgate's own (EventStore): they never hold a line break.
func (s *SSE) EventID(id string, msg []byte) error {
	return s.Write(AppendEvent(make([]byte, 0, len(msg)+24+len(id)), id, msg))
}

// AppendEvent appends the event that carries msg, with id unless it is empty.
//
// Line breaks are looked for with bytes.IndexByte, once for LF and once for CR, each found
// again only once the framing has passed it: a vectorised scan where IndexAny tested every
// byte against a set (8 % of a 1 MiB answer's CPU), and linear however the two interleave.
func AppendEvent[ID string | []byte](buf []byte, id ID, msg []byte) []byte {
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

// PlacedEvent is a message encoded in place for its event: behind room for the event's head,
// with room for its end, so that framing it copies the head, not the message. A 1 MiB answer
// was encoded into a body and copied again into its frame: a megabyte copied and allocated
// more per call.
type PlacedEvent struct {
	buf []byte // buf[at:] is the message
	at  int
}

// placedHeadRoom is what a head may take: a priming event, and an event's id and fields.
const placedHeadRoom = 2*MaxEventIDLen + 64

// CopiedEvent is a message with no room in front: Frame copies it.
func CopiedEvent(msg []byte) PlacedEvent { return PlacedEvent{buf: msg} }

// PlaceEvent encodes m for its event.
func PlaceEvent(m *jsonrpc.Message) PlacedEvent {
	buf := make([]byte, placedHeadRoom, placedHeadRoom+m.EncodedLen()+len("\n\n"))
	return PlacedEvent{buf: m.AppendEncode(buf), at: placedHeadRoom}
}

// Data is the encoded message, for the replay log and the trace; it lives as long as the frame.
func (p PlacedEvent) Data() []byte { return p.buf[p.at:] }

// Frame completes the event that carries the message, with id unless it is empty, after head
// (a priming event, or nothing): the bytes AppendEvent(head, id, data) would make. Encode
// never writes a line break, so the message is one data line; should one be there, or the
// head not fit (a PlacedEvent{buf: msg} has no room at all), the event is framed by
// AppendEvent, copying.
func (p PlacedEvent) Frame(head []byte, id []byte) []byte {
	msg := p.Data()
	n := len(head) + len("event: message\ndata: ")
	if len(id) > 0 {
		n += len("id: \n") + len(id)
	}
	if n > p.at || bytes.IndexByte(msg, '\n') >= 0 || bytes.IndexByte(msg, '\r') >= 0 {
		return AppendEvent(append(make([]byte, 0, len(head)+len(msg)+len(id)+64), head...), id, msg)
	}
	h := append(p.buf[p.at-n:p.at-n], head...)
	if len(id) > 0 {
		h = append(append(append(h, "id: "...), id...), '\n')
	}
	_ = append(h, "event: message\ndata: "...) // fills buf[at-n:at]
	return append(p.buf[p.at-n:], "\n\n"...)
}

// indexFrom is the index in b of the first c at or after from, or -1.
func indexFrom(b []byte, from int, c byte) int {
	if i := bytes.IndexByte(b[from:], c); i >= 0 {
		return from + i
	}
	return -1
}

// Prime writes the priming event: an id the client can resume from before any message has
// come, and the reconnection delay, with empty data.
func (s *SSE) Prime(id string, retry time.Duration) error {
	return s.Write(AppendPrime(nil, id, retry))
}

// AppendPrime appends the priming event with id and retry, the bytes Prime writes.
func AppendPrime[ID string | []byte](buf []byte, id ID, retry time.Duration) []byte {
	buf = append(append(append(buf, "id: "...), id...), "\nretry: "...)
	buf = strconv.AppendInt(buf, retry.Milliseconds(), 10)
	return append(buf, "\ndata: \n\n"...)
}

// Comment writes a comment line: an event that no client dispatches (keepalives).
func (s *SSE) Comment(text string) error {
	return s.Write([]byte(": " + text + "\n\n"))
}

// RetryHint sets the client's reconnection delay before a stream ends for shutdown: an SSE
// retry field alone, which no client dispatches as an event.
func (s *SSE) RetryHint(d time.Duration) error {
	return s.Write([]byte("retry: " + strconv.FormatInt(d.Milliseconds(), 10) + "\n\n"))
}

// WriteJSON answers with a JSON body instead of a stream (WriteBodyWithin).
func (s *SSE) WriteJSON(status int, body []byte) { WriteBodyWithin(s.w, status, body, s.timeout) }

// WriteHeader answers with status alone.
func (s *SSE) WriteHeader(status int) { s.w.WriteHeader(status) }

// Write writes b and flushes it, within the write timeout.
func (s *SSE) Write(b []byte) error { return WriteFlushed(&s.rc, s.w, b, s.Stop, s.timeout) }

// flush flushes what was written (the headers), within the write timeout.
func (s *SSE) flush() error {
	_ = s.rc.SetWriteDeadline(time.Now().Add(s.timeout))
	err := s.rc.Flush()
	_ = s.rc.SetWriteDeadline(time.Time{})
	return err
}
