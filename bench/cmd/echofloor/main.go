package main

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"sync"
)

type request struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Params struct {
		Arguments struct {
			Text string `json:"text"`
		} `json:"arguments"`
	} `json:"params"`
}

type server struct {
	mu       sync.Mutex
	sessions map[string]bool
}

func main() {
	listen := flag.String("listen", "127.0.0.1:0", "loopback address")
	flag.Parse()
	ln, err := net.Listen("tcp", *listen)
	if err != nil {
		log.Fatal(err)
	}
	if !ln.Addr().(*net.TCPAddr).IP.IsLoopback() {
		log.Fatal("echofloor listens on loopback only")
	}
	s := &server{sessions: map[string]bool{}}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /mcp", s.post)
	mux.HandleFunc("GET /mcp", s.get)
	mux.HandleFunc("DELETE /mcp", s.delete)
	fmt.Printf("ready http://%s/mcp\n", ln.Addr())
	log.Fatal(http.Serve(ln, mux))
}

func (s *server) known(r *http.Request) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.sessions[r.Header.Get("Mcp-Session-Id")]
}

func (s *server) post(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, 4<<20))
	var req request
	if err != nil || json.Unmarshal(body, &req) != nil {
		http.Error(w, "bad request", http.StatusBadRequest)
		return
	}
	if req.Method == "initialize" {
		var b [16]byte
		_, _ = rand.Read(b[:])
		id := hex.EncodeToString(b[:])
		s.mu.Lock()
		s.sessions[id] = true
		s.mu.Unlock()
		w.Header().Set("Mcp-Session-Id", id)
		answer(w, req.ID, map[string]any{
			"protocolVersion": "2025-06-18", "capabilities": map[string]any{"tools": map[string]any{}},
			"serverInfo": map[string]any{"name": "echofloor", "version": "1"},
		})
		return
	}
	if !s.known(r) {
		http.Error(w, "unknown session", http.StatusNotFound)
		return
	}
	if req.ID == nil {
		w.WriteHeader(http.StatusAccepted)
		return
	}
	if req.Method == "tools/call" {
		answer(w, req.ID, map[string]any{"content": []any{map[string]any{"type": "text", "text": req.Params.Arguments.Text}}})
		return
	}
	answer(w, req.ID, map[string]any{})
}

func answer(w http.ResponseWriter, id json.RawMessage, result any) {
	b, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": id, "result": result})
	if err != nil {
		http.Error(w, "internal error", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(b)
}

func (s *server) get(w http.ResponseWriter, r *http.Request) {
	if !s.known(r) {
		http.Error(w, "unknown session", http.StatusNotFound)
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	w.WriteHeader(http.StatusOK)
	http.NewResponseController(w).Flush()
	<-r.Context().Done()
}

func (s *server) delete(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	delete(s.sessions, r.Header.Get("Mcp-Session-Id"))
	s.mu.Unlock()
}
