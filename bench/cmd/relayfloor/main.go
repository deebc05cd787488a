package main

import (
	"bufio"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"

	"github.com/gemgate/gemgate/bench/internal/floor"
)

// maxBody bounds a request body.
const maxBody = 16 << 20

// relay is the one shared worker and the calls waiting for it.
type relay struct {
	stdin   io.Writer
	writeMu sync.Mutex // one line at a time to the worker

	mu       sync.Mutex
	pending  map[int64]chan []byte
	next     atomic.Int64
	sessions floor.Sessions

	initResult json.RawMessage
}

func main() {
	listen := flag.String("listen", "127.0.0.1:0", "loopback address")
	flag.Parse()
	if flag.NArg() == 0 {
		log.Fatal("usage: relayfloor [-listen ADDR] -- WORKER [ARGS...]")
	}
	ln := floor.Listen(*listen, "relayfloor")
	r, err := start(flag.Args())
	if err != nil {
		log.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /mcp", r.post)
	mux.HandleFunc("GET /mcp", r.sessions.Stream)
	mux.HandleFunc("DELETE /mcp", r.sessions.Delete)
	fmt.Printf("ready http://%s/mcp\n", ln.Addr())
	log.Fatal(http.Serve(ln, mux))
}

// start runs the worker, initializes it, and reads its answers from then on.
func start(argv []string) (*relay, error) {
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Stderr = os.Stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL} // the worker goes with the relay
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	go func() { log.Fatalf("worker ended: %v", cmd.Wait()) }()
	r := &relay{stdin: stdin, pending: map[int64]chan []byte{}}
	out := bufio.NewReaderSize(stdout, 64<<10)

	init := `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"relayfloor","version":"1"}}}` + "\n" +
		`{"jsonrpc":"2.0","method":"notifications/initialized"}` + "\n"
	if _, err := io.WriteString(stdin, init); err != nil {
		return nil, err
	}
	for r.initResult == nil {
		line, err := out.ReadBytes('\n')
		if err != nil {
			return nil, fmt.Errorf("worker's initialize: %w", err)
		}
		var a struct {
			ID     json.RawMessage `json:"id"`
			Result json.RawMessage `json:"result"`
		}
		if json.Unmarshal(line, &a) == nil && string(a.ID) == "0" && a.Result != nil {
			r.initResult = a.Result
		}
	}
	go r.read(out)
	return r, nil
}

// read hands each answer of the worker to the call waiting for it; anything else is dropped.
func (r *relay) read(out *bufio.Reader) {
	for {
		line, err := out.ReadBytes('\n')
		if err != nil {
			log.Fatalf("worker's stdout: %v", err)
		}
		var a struct {
			ID json.RawMessage `json:"id"`
		}
		if json.Unmarshal(line, &a) != nil {
			continue
		}
		id, err := strconv.ParseInt(string(a.ID), 10, 64)
		if err != nil {
			continue
		}
		r.mu.Lock()
		ch := r.pending[id]
		delete(r.pending, id)
		r.mu.Unlock()
		if ch != nil {
			ch <- line
		}
	}
}

func (r *relay) post(w http.ResponseWriter, req *http.Request) {
	body, err := io.ReadAll(http.MaxBytesReader(w, req.Body, maxBody))
	var msg map[string]json.RawMessage
	if err != nil || json.Unmarshal(body, &msg) != nil {
		http.Error(w, "bad request", http.StatusBadRequest)
		return
	}
	clientID, hasID := msg["id"]
	var method string
	_ = json.Unmarshal(msg["method"], &method)
	if method == "initialize" && hasID {
		r.sessions.Open(w)
		floor.JSON(w, map[string]json.RawMessage{"jsonrpc": json.RawMessage(`"2.0"`), "id": clientID, "result": r.initResult})
		return
	}
	if !r.sessions.Known(w, req) {
		return
	}
	if !hasID {
		w.WriteHeader(http.StatusAccepted) // notifications stop here: the worker was initialized once
		return
	}

	id := r.next.Add(1)
	msg["id"] = json.RawMessage(strconv.FormatInt(id, 10))
	line, err := json.Marshal(msg)
	if err != nil {
		http.Error(w, "bad request", http.StatusBadRequest)
		return
	}
	ch := make(chan []byte, 1)
	r.mu.Lock()
	r.pending[id] = ch
	r.mu.Unlock()
	r.writeMu.Lock()
	_, err = r.stdin.Write(append(line, '\n'))
	r.writeMu.Unlock()
	if err != nil {
		http.Error(w, "worker gone", http.StatusBadGateway)
		return
	}
	select {
	case got := <-ch:
		var ans map[string]json.RawMessage
		if err := json.Unmarshal(got, &ans); err != nil {
			http.Error(w, "bad answer", http.StatusBadGateway)
			return
		}
		ans["id"] = clientID
		floor.JSON(w, ans)
	case <-req.Context().Done():
		r.mu.Lock()
		delete(r.pending, id)
		r.mu.Unlock()
	}
}
