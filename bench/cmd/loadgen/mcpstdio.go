package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os/exec"
	"strconv"
	"syscall"
	"time"
)

// stdioSession is one MCP session straight to a worker process over NDJSON stdio: the floor
// every gateway adds its cost to.
type stdioSession struct {
	cmd    *exec.Cmd
	in     *bufio.Writer
	stdin  io.WriteCloser
	out    *bufio.Reader
	nextID int
}

func startStdio(argv []string) (*stdioSession, error) {
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
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
	return &stdioSession{cmd: cmd, stdin: stdin, in: bufio.NewWriterSize(stdin, 64<<10), out: bufio.NewReaderSize(stdout, 64<<10)}, nil
}

func (s *stdioSession) send(v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	s.in.Write(b)
	s.in.WriteByte('\n')
	return s.in.Flush()
}

func (s *stdioSession) call(method string, params any) (*rpcAnswer, error) {
	s.nextID++
	want := strconv.Itoa(s.nextID)
	if err := s.send(map[string]any{"jsonrpc": "2.0", "id": s.nextID, "method": method, "params": params}); err != nil {
		return nil, err
	}
	for {
		line, err := s.out.ReadBytes('\n')
		if err != nil {
			return nil, fmt.Errorf("%s: worker stdout: %w", method, err)
		}
		a, ok := answerLine(line)
		if !ok || string(a.ID) != want {
			continue // a request or notification of the worker's, or chatter
		}
		if a.Error != nil {
			return nil, fmt.Errorf("%s: JSON-RPC error %s", method, a.Error)
		}
		return a, nil
	}
}

// open is the floor's session open: the time from starting the worker to its initialize answer.
func openStdio(argv []string) (*stdioSession, time.Duration, error) {
	start := time.Now()
	s, err := startStdio(argv)
	if err != nil {
		return nil, 0, err
	}
	if _, err := s.call("initialize", initParams); err != nil {
		s.close()
		return nil, 0, err
	}
	took := time.Since(start)
	return s, took, s.send(map[string]any{"jsonrpc": "2.0", "method": "notifications/initialized"})
}

func (s *stdioSession) echo(text string) error {
	a, err := s.call("tools/call", map[string]any{"name": "echo", "arguments": map[string]any{"text": text}})
	if err != nil {
		return err
	}
	return checkEcho(a, text)
}

func (s *stdioSession) close() {
	s.stdin.Close()
	done := make(chan struct{})
	go func() { _ = s.cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(2 * time.Second):
		_ = s.cmd.Process.Kill()
		<-done
	}
}
