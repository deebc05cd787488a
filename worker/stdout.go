//go:build linux

package worker

// What a worker writes: its stdout lines, each checked and routed to the call it answers (or
// handed on as the worker's own message), and its stderr, logged.

import (
	"bytes"
	"cmp"
	"io"
	"log/slog"
	"os"
	"strconv"
	"syscall"
	"time"
	"unicode/utf8"

	"github.com/gemgate/gemgate/jsonrpc"
)

// readStdout routes the worker's stdout until it ends, and reports whether it ended at the end
// of input, the worker having closed it (or exited).
func (p *Process) readStdout(r *os.File) (eof bool) {
	defer r.Close()
	// An idle worker's reader holds no buffer (lines.go), whatever the longest line was.
	sc := newLineReader(r, DefaultMaxLineBytes)
	greeted := p.spec.Greeting == nil // the greeting is over: done, or refused
	for {
		// An owned line (lines.go) is parsed in place: the message may alias it.
		line, owned, ok := sc.take()
		if !ok {
			eof = sc.err == nil
			break
		}
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		if !utf8.Valid(line) {
			line, owned = p.validUTF8(line), true // a fresh copy
		}
		if p.spec.OnTrace != nil {
			p.spec.OnTrace("from_worker", p.Redacted(line))
		}
		if !greeted {
			// The refusal goes to the log and the client, cut to fit: the credential is taken
			// out first, whole, not after a cut that could halve it.
			done, err := p.spec.Greeting(p.Redacted(line))
			if err != nil {
				p.refuse(err)
				greeted = true
				break
			}
			greeted = done
			continue
		}
		if p.spec.Strict && sc.cut {
			// Half a line, and then the end of stdout: the worker died while it wrote. Its
			// calls fail with the exit's reason (wait), not as answered with a corrupted one.
			p.log.Warn("worker stdout ended in the middle of a line; dropped", "bytes", len(line))
			continue
		}
		m, err := jsonrpc.Parse(line, jsonrpc.Options{Owned: owned}) // a request, notification or response
		if err != nil {
			if p.spec.Strict {
				p.failOldest(line)
				continue
			}
			// Chatter (a banner, a login message) is not an error; it is just not for the client.
			p.LogQuoting(slog.LevelWarn, "worker stdout line is not JSON-RPC; skipped", "line", line, "error", err)
			continue
		}
		p.route(m)
	}
	p.logSkipped(true)
	if !greeted {
		if _, err := p.spec.Greeting(nil); err != nil {
			p.refuse(err)
		}
	}
	if err := sc.err; err != nil && !p.stdoutCut.Load() {
		p.log.Error("worker stdout unreadable; stopping the worker", "error", err)
		p.kill(syscall.SIGKILL)
	}
	return eof && !p.stdoutCut.Load()
}

// stopWithoutStdout stops a worker whose stdout has ended, unless it exits within the grace
// (the end of stdout is most often the end of the worker): one that runs on without it can
// never answer, so its calls would wait for ever (request_timeout is off by default).
func (p *Process) stopWithoutStdout() {
	t := time.NewTimer(p.spec.StopGrace)
	defer t.Stop()
	select {
	case <-p.exited:
		return
	case <-t.C:
	}
	p.log.Warn("worker closed its stdout but runs on; stopping it", "pid", p.Pid())
	p.Stop()
}

// validUTF8 replaces each run of invalid UTF-8 with U+FFFD, so that no client receives it:
// such bytes can only sit inside JSON strings, so the line stays the same JSON.
func (p *Process) validUTF8(line []byte) []byte {
	if !p.badUTF8 {
		p.badUTF8 = true // only the reading goroutine touches it
		p.log.Warn("worker wrote invalid UTF-8; replaced with U+FFFD (logged once per worker)", "pid", p.Pid())
	}
	return bytes.ToValidUTF8(line, []byte("\uFFFD"))
}

func (p *Process) route(m *jsonrpc.Message) {
	if !m.IsResponse() {
		if p.spec.OnMessage != nil {
			p.spec.OnMessage(m)
		}
		return
	}
	id, err := strconv.ParseInt(string(m.ID), 10, 64)
	var c *Call
	var sent bool
	if err == nil {
		c, sent = p.answered(id)
	}
	switch {
	case c != nil:
		m.ID = c.clientID
		c.to.Deliver(m)
	case sent && p.spec.Strict:
		// A late answer to a call given up on (Abandon): in its place in the order, not a
		// corrupted one, so the call behind it waits for its own.
		if p.allow(slog.LevelDebug) {
			p.log.Debug("late answer from worker; dropped", "id", id)
		}
	case p.spec.Strict:
		p.failOldest(m.Encode())
	case err != nil:
		p.LogQuoting(slog.LevelWarn, "worker answered an id the gateway never sent; dropped", "id", m.ID)
	case p.allow(slog.LevelDebug):
		p.log.Debug("late or unknown answer from worker; dropped", "id", id)
	}
}

// answered takes the pending call that worker id id answers (nil if none), and reports
// whether gemgate sent a call under that id. A Strict worker's answer to one tells that the
// calls given up on before it have had their answers, or will have none.
func (p *Process) answered(id int64) (c *Call, sent bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	c = p.pending[id]
	delete(p.pending, id)
	sent = id > 0 && id <= p.nextID // a pending call's id too
	if sent && p.spec.Strict {
		for g := range p.givenUp {
			if g <= id {
				delete(p.givenUp, g)
			}
		}
	}
	return c, sent
}

// failOldest fails the oldest call (the least worker id) of a Strict worker with StrictError:
// the line was its answer, and not a valid one. When that call was given up on, nothing fails.
func (p *Process) failOldest(line []byte) {
	p.mu.Lock()
	var c *Call
	for id, pc := range p.pending {
		if c == nil || id < c.workerID {
			c = pc
		}
	}
	var gaveUp int64 // the least call given up on, if it is older than every pending one
	for id := range p.givenUp {
		if (gaveUp == 0 || id < gaveUp) && (c == nil || id < c.workerID) {
			gaveUp = id
		}
	}
	if gaveUp != 0 {
		delete(p.givenUp, gaveUp)
		c = nil
	} else if c != nil {
		delete(p.pending, c.workerID)
	}
	p.mu.Unlock()
	msg := cmp.Or(p.spec.StrictError, "the worker's answer is not valid JSON-RPC")
	if p.allow(slog.LevelError) {
		what := "worker answer corrupted; the call fails"
		if gaveUp != 0 {
			what = "worker answer corrupted, to a call given up on; dropped"
		}
		p.log.Error(what, "bytes", len(line), "line", p.snippet(line))
	}
	if c == nil {
		return
	}
	c.to.Deliver(jsonrpc.ErrorResponse(c.clientID, jsonrpc.CodeInternalError, msg, map[string]any{"kind": "corruptAnswer"}))
}

// refuse records why the worker cannot serve and stops it; pending calls get that reason.
func (p *Process) refuse(err error) {
	p.mu.Lock()
	p.greetErr = err
	p.mu.Unlock()
	p.log.Warn("worker refused to serve", "error", err) // from a line redacted before the greeting read it
	p.kill(syscall.SIGKILL)
}

// A worker's stderr lines are logged at the worker's log rate (loglimit.go).
func (p *Process) readStderr(r *os.File) {
	defer r.Close()
	sc := newLineReader(r, 1<<20)
	for line, _, ok := sc.take(); ok; line, _, ok = sc.take() {
		p.LogQuoting(slog.LevelInfo, "worker stderr", "line", line)
	}
	p.logSkipped(true)
	// A line over 1 MiB ends the scan; drain the rest so the worker never blocks on stderr.
	_, _ = io.Copy(io.Discard, r)
}
