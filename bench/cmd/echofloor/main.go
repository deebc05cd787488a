package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log"
	"net/http"

	"github.com/gemgate/gemgate/bench/internal/floor"
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

type server struct{ sessions floor.Sessions }

func main() {
	listen := flag.String("listen", "127.0.0.1:0", "loopback address")
	flag.Parse()
	ln := floor.Listen(*listen, "echofloor")
	s := &server{}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /mcp", s.post)
	mux.HandleFunc("GET /mcp", s.sessions.Stream)
	mux.HandleFunc("DELETE /mcp", s.sessions.Delete)
	fmt.Printf("ready http://%s/mcp\n", ln.Addr())
	log.Fatal(http.Serve(ln, mux))
}

func (s *server) post(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, 4<<20))
	var req request
	if err != nil || json.Unmarshal(body, &req) != nil {
		http.Error(w, "bad request", http.StatusBadRequest)
		return
	}
	if req.Method == "initialize" {
		s.sessions.Open(w)
		answer(w, req.ID, map[string]any{
			"protocolVersion": "2025-06-18", "capabilities": map[string]any{"tools": map[string]any{}},
			"serverInfo": map[string]any{"name": "echofloor", "version": "1"},
		})
		return
	}
	if !s.sessions.Known(w, r) {
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
	floor.JSON(w, map[string]any{"jsonrpc": "2.0", "id": id, "result": result})
}
