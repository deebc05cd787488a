package wire

import (
	"bytes"
	"net/http"
	"strconv"
	"time"

	"github.com/gemgate/gemgate/jsonrpc"
)

// SSE writes Server-Sent Events, each flushed at once and bounded by timeout (WriteFlushed).
type SSE struct {
	w       http.ResponseWriter
	rc      http.ResponseController // a value: no allocation inside another struct
	timeout time.Duration
	Stop    <-chan struct{} // closed: a long write ends between chunks (shutdown)
}

// KeepaliveInterval is sized to proxy and NAT idle timeouts, not to sessions: an idle stream
// carries a comment at least this often.
const KeepaliveInterval = 15 * time.Second

func NewSSE(w http.ResponseWriter, timeout time.Duration) *SSE {
	s := &SSE{}
	s.Init(w, timeout)
	return s
}

// Init makes s, held by value, a stream on w.
func (s *SSE) Init(w http.ResponseWriter, timeout time.Duration) {
	s.w, s.rc, s.timeout = w, *http.NewResponseController(w), timeout
}

// Shared by every stream: net/http copies the map, and no spare capacity makes Add copy too.
var (
	sseContentType  = []string{"text/event-stream"}
	sseCacheControl = []string{"no-cache, no-transform"}
	sseNoBuffering  = []string{"no"}
)

// Start writes the headers and flushes them: an empty write, which net/http does not pass on.
func (s *SSE) Start() error { return s.Begin(nil) }

func (s *SSE) writeHeader() {
	h := s.w.Header()
	h["Content-Type"] = sseContentType
	h["Cache-Control"] = sseCacheControl
	h["X-Accel-Buffering"] = sseNoBuffering // nginx-style proxies must not buffer it
	s.w.WriteHeader(http.StatusOK)
}

// Begin writes the headers and first events in one write.
func (s *SSE) Begin(first []byte) error {
	s.writeHeader()
	return s.Write(first)
}

// Whole writes a complete stream with its length: no chunked encoding's last chunk.
func (s *SSE) Whole(body []byte) error {
	s.w.Header()["Content-Length"] = []string{strconv.Itoa(len(body))}
	return s.Begin(body)
}

// Event writes one message; a line break splits data lines, so it can never end the event or
// smuggle in fields.
func (s *SSE) Event(msg []byte) error { return s.EventID("", msg) }

// EventID writes a message with an event id (EventStore's: no line break).
func (s *SSE) EventID(id string, msg []byte) error {
	return s.Write(AppendEvent(make([]byte, 0, len(msg)+24+len(id)), id, msg))
}

// AppendEvent appends the event that carries msg, with id unless it is empty.
//
// LF and CR are each found by bytes.IndexByte, again only once passed: vectorised, where
// IndexAny cost 8 % of a 1 MiB answer's CPU, and linear however the two interleave.
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

// PlacedEvent is a message encoded behind room for its event's head: framing copies the head,
// not a megabyte answer.
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

// Data is the encoded message; it lives as long as the frame.
func (p PlacedEvent) Data() []byte { return p.buf[p.at:] }

// Frame completes the event after head: AppendEvent(head, id, data)'s bytes, which it falls
// back to for a line break or no room.
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

// Prime writes the priming event: an id to resume from, and the reconnection delay.
func (s *SSE) Prime(id string, retry time.Duration) error {
	return s.Write(AppendPrime(nil, id, retry))
}

func AppendPrime[ID string | []byte](buf []byte, id ID, retry time.Duration) []byte {
	buf = append(append(append(buf, "id: "...), id...), "\nretry: "...)
	buf = strconv.AppendInt(buf, retry.Milliseconds(), 10)
	return append(buf, "\ndata: \n\n"...)
}

// Comment writes a comment line, which no client dispatches (keepalives).
func (s *SSE) Comment(text string) error {
	return s.Write([]byte(": " + text + "\n\n"))
}

// RetryHint sets the reconnection delay before a stream ends for shutdown.
func (s *SSE) RetryHint(d time.Duration) error {
	return s.Write([]byte("retry: " + strconv.FormatInt(d.Milliseconds(), 10) + "\n\n"))
}

func (s *SSE) WriteJSON(status int, body []byte) { WriteBodyWithin(s.w, status, body, s.timeout) }

func (s *SSE) WriteHeader(status int) { s.w.WriteHeader(status) }

func (s *SSE) Write(b []byte) error { return WriteFlushed(&s.rc, s.w, b, s.Stop, s.timeout) }
