// Package floor is what the benchmark's two floors, echofloor and relayfloor, share: a
// loopback listener, the map of session ids, the GET stream and DELETE, and a JSON answer.
// Just enough Streamable HTTP for loadgen, and nothing a gateway would add.
package floor

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"log"
	"net"
	"net/http"
	"sync"
)

// Listen listens on addr, which must be a loopback address, for the floor named name.
func Listen(addr, name string) net.Listener {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		log.Fatal(err)
	}
	if !ln.Addr().(*net.TCPAddr).IP.IsLoopback() {
		log.Fatalf("%s listens on loopback only", name)
	}
	return ln
}

// Sessions are the session ids handed out by initialize; the zero value is ready.
type Sessions struct {
	mu  sync.Mutex
	ids map[string]bool
}

// Open makes a new session id and sets it on the answer.
func (s *Sessions) Open(w http.ResponseWriter) {
	var b [16]byte
	_, _ = rand.Read(b[:])
	id := hex.EncodeToString(b[:])
	s.mu.Lock()
	if s.ids == nil {
		s.ids = map[string]bool{}
	}
	s.ids[id] = true
	s.mu.Unlock()
	w.Header().Set("Mcp-Session-Id", id)
}

// Known reports whether r names a session that is open; if not, it answers 404.
func (s *Sessions) Known(w http.ResponseWriter, r *http.Request) bool {
	s.mu.Lock()
	known := s.ids[r.Header.Get("Mcp-Session-Id")]
	s.mu.Unlock()
	if !known {
		http.Error(w, "unknown session", http.StatusNotFound)
	}
	return known
}

// Stream serves a session's GET stream: open, and silent until the client goes.
func (s *Sessions) Stream(w http.ResponseWriter, r *http.Request) {
	if !s.Known(w, r) {
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	w.WriteHeader(http.StatusOK)
	_ = http.NewResponseController(w).Flush()
	<-r.Context().Done()
}

// Delete ends a session.
func (s *Sessions) Delete(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	delete(s.ids, r.Header.Get("Mcp-Session-Id"))
	s.mu.Unlock()
}

// JSON answers with v encoded.
func JSON(w http.ResponseWriter, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		http.Error(w, "internal error", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(b)
}
