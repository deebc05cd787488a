package gateway

import (
	"net/http"
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

// event writes one JSON-RPC message. Messages are single-line JSON, so one data line holds it.
func (s *sse) event(msg []byte) error {
	buf := make([]byte, 0, len(msg)+24)
	buf = append(buf, "event: message\ndata: "...)
	buf = append(buf, msg...)
	buf = append(buf, "\n\n"...)
	return s.write(buf)
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
