// Command thvproxy runs ToolHive's streamable-HTTP proxy (driven as a library) in front of one
// local stdio MCP worker, for gemgate's side-by-side benchmark. ToolHive's model is one shared
// worker process behind the proxy; every client session talks to that one process.
//
//	thvproxy -port 18932 -- /path/to/worker args...
//
// It prints "ready http://127.0.0.1:PORT/mcp" on stdout once the proxy listens.
package main

import (
	"bufio"
	"context"
	"flag"
	"fmt"
	"log"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"syscall"
	"time"

	"github.com/stacklok/toolhive/pkg/transport/proxy/streamable"
	"golang.org/x/exp/jsonrpc2"
)

func main() {
	port := flag.Int("port", 18932, "listen port on 127.0.0.1")
	flag.Parse()
	if flag.NArg() == 0 {
		log.Fatal("usage: thvproxy -port N -- worker [args...]")
	}
	slog.SetDefault(slog.New(slog.DiscardHandler))

	cmd := exec.Command(flag.Arg(0), flag.Args()[1:]...)
	cmd.Stderr = os.Stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	stdin, err := cmd.StdinPipe()
	if err != nil {
		log.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		log.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		log.Fatal(err)
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	p := streamable.NewHTTPProxy("127.0.0.1", *port, nil, nil)
	if err := p.Start(ctx); err != nil {
		log.Fatal(err)
	}

	// Client -> worker: one encoded message per line.
	go func() {
		w := bufio.NewWriter(stdin)
		for {
			select {
			case <-ctx.Done():
				return
			case m := <-p.GetMessageChannel():
				b, err := jsonrpc2.EncodeMessage(m)
				if err != nil {
					log.Printf("encode: %v", err)
					continue
				}
				w.Write(b)
				w.WriteByte('\n')
				w.Flush()
			}
		}
	}()
	// Worker -> clients.
	go func() {
		sc := bufio.NewScanner(stdout)
		sc.Buffer(make([]byte, 0, 64<<10), 16<<20)
		for sc.Scan() {
			m, err := jsonrpc2.DecodeMessage(sc.Bytes())
			if err != nil {
				continue
			}
			if err := p.ForwardResponseToClients(ctx, m); err != nil {
				log.Printf("forward: %v", err)
			}
		}
		stop()
	}()

	addr := fmt.Sprintf("127.0.0.1:%d", *port)
	for i := 0; i < 200; i++ {
		if c, err := net.DialTimeout("tcp", addr, 50*time.Millisecond); err == nil {
			c.Close()
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	fmt.Printf("ready http://%s%s\n", addr, streamable.StreamableHTTPEndpoint)
	<-ctx.Done()
	sctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	_ = p.Stop(sctx)
	_ = cmd.Process.Kill()
	_, _ = cmd.Process.Wait()
}
