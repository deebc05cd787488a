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
	rc      *http.ResponseController
	started bool
}

func newSSE(w http.ResponseWriter) *sse {
	return &sse{w: w, rc: http.NewResponseController(w)}
}

func (s *sse) start(extra http.Header) error {
	h := s.w.Header()
	for k, v := range extra {
		h[k] = v
	}
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache, no-transform")
	h.Set("X-Accel-Buffering", "no") // tells nginx-style proxies not to buffer the stream
	s.w.WriteHeader(http.StatusOK)
	s.started = true
	return s.flush()
}

// event writes one JSON-RPC message. Messages are single-line JSON, so one data line holds
// it; anything with a line break (CR, LF or CRLF, each of which ends an SSE line) is split
// into several data lines, which a client joins back with LF, so it can never end the event
// early or smuggle in fields of its own.
func (s *sse) event(msg []byte) error { return s.eventID("", msg) }

// eventID writes a message with an event id, so that a client can resume after it. Ids are
// gemgate's own (resume.go): they never hold a line break.
func (s *sse) eventID(id string, msg []byte) error {
	buf := make([]byte, 0, len(msg)+24+len(id))
	if id != "" {
		buf = append(append(append(buf, "id: "...), id...), '\n')
	}
	buf = append(buf, "event: message\n"...)
	for {
		i := bytes.IndexAny(msg, "\r\n")
		if i < 0 {
			break
		}
		buf = append(append(append(buf, "data: "...), msg[:i]...), '\n')
		if msg[i] == '\r' && i+1 < len(msg) && msg[i+1] == '\n' {
			i++
		}
		msg = msg[i+1:]
	}
	buf = append(append(buf, "data: "...), msg...)
	buf = append(buf, "\n\n"...)
	return s.write(buf)
}

// prime writes the priming event: an id the client can resume from before any message has
// come, and the reconnection delay, with empty data.
func (s *sse) prime(id string, retry time.Duration) error {
	return s.write([]byte("id: " + id + "\nretry: " + strconv.FormatInt(retry.Milliseconds(), 10) + "\ndata: \n\n"))
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
