//go:build linux

package worker

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/gemgate/gemgate/jsonrpc"
)

// DefaultStopGrace is how long each stage of a stop waits (closed stdin, SIGTERM, SIGKILL)
// unless Spec.StopGrace says otherwise.
const DefaultStopGrace = 2 * time.Second

// DefaultMaxLineBytes is the longest line a worker may write on stdout.
const DefaultMaxLineBytes = 16 << 20

// Spec says how to start one worker process.
type Spec struct {
	Path string   // the executable, resolved
	Args []string // arguments after the program name; never secrets
	Env  []string // the whole environment of the process

	// OnMessage gets every message of the worker's that answers no call (notifications, its
	// own requests, their ids untouched), on the reading goroutine: it must not block.
	OnMessage func(*jsonrpc.Message)
	// OnTrace, if set, sees every line to ("to_worker") and from ("from_worker") the worker.
	OnTrace func(direction string, line []byte)

	// Greeting, if set, sees every stdout line until it reports done; no line is routed
	// before. An error fails every pending call with its text and stops the worker. If
	// stdout ends first, Greeting gets a nil line, to explain from the chatter it saw.
	Greeting func(line []byte) (done bool, err error)
	// Strict is for workers that answer one request at a time and write only JSON-RPC: a
	// line that is not a valid answer fails the oldest pending call with StrictError.
	Strict      bool
	StrictError string

	Logger       *slog.Logger  // nil discards; carries the session and user fields
	StopGrace    time.Duration // how long each stage of Stop waits; default DefaultStopGrace
	WriteTimeout time.Duration // bounds each write, else the worker is hung; default DefaultWriteTimeout

	// Credential, if not nil, is handed to the worker on an inherited pipe (descriptor 3,
	// named by GEMGATE_CREDENTIAL_FD) that the worker reads to its end once: never in its
	// environment or on its command line, where other processes could read it.
	Credential []byte
	// CredentialStdin hands the Credential over as the first line of stdin instead, never
	// traced (the GemStone relay under topaz). Start refuses a credential with a CR or LF.
	CredentialStdin bool
	// Secrets are other values the worker was handed that no log line may carry (a credential
	// in its environment).
	Secrets [][]byte
	Sandbox *Sandbox // if not nil, confines the worker with bubblewrap
	RunAs   *Account // if not nil, the account the worker runs as; gemgate must be root
	Caps    *Caps    // if not nil, bound the worker's memory, processes, CPU and open files
}

// DefaultWriteTimeout is how long a write to a worker may wait for the worker to read.
const DefaultWriteTimeout = 10 * time.Second

// ErrHung is why a worker that stopped reading its stdin was stopped (Send's error; Err wraps it).
var ErrHung = errors.New("worker stopped reading its input")

// ErrExited is returned by Send once the worker has exited or is being stopped.
var ErrExited = errors.New("worker has exited")

// Process is one running worker.
type Process struct {
	spec  Spec
	log   *slog.Logger
	cmd   *exec.Cmd
	stdin *os.File // the gateway's end of the worker's stdin

	turn chan struct{} // holds a value while a caller writes to stdin (stdin.go)

	mu      sync.Mutex
	nextID  int64
	pending map[int64]*Call // by worker id, given in the order sent (Strict workers answer in order)
	// givenUp are the worker ids of a Strict worker's calls abandoned unanswered: it still
	// answers each in its turn, and a corrupted answer to one is that call's (failOldest).
	givenUp  map[int64]struct{}
	closed   bool
	hung     bool // a write outlived WriteTimeout: the worker was stopped for it
	badUTF8  bool // invalid UTF-8 seen (and logged) already
	exitErr  error
	greetErr error // why the worker refused to serve, from its greeting

	afterDone []func() // AfterDone's functions, run once done is closed

	// secrets are the credential and Spec.Secrets, and their other spellings, redacted from
	// every line gemgate logs or traces (redact.go).
	secrets [][]byte

	logged logLimit // the worker's share of the log, every line it causes (loglimit.go)

	cgroup *cgroup // the worker's own cgroup, with Caps.Cgroup

	exited    chan struct{} // the process itself has been reaped
	done      chan struct{} // exited, stdout drained (or cut), pending calls failed
	stdoutCut atomic.Bool   // wait closed stdout, held open by a process left behind
	stopOnce  sync.Once
}

// Call is one request in flight at the worker.
type Call struct {
	p        *Process
	workerID int64
	clientID json.RawMessage
	to       Recipient // Send's, or Result's buffer of one (answers)
}

// Result delivers the answer, with the caller's id restored. A worker that exits first
// delivers a JSON-RPC error instead, so a receive on it always ends once the worker is done.
func (c *Call) Result() <-chan *jsonrpc.Message {
	ch, _ := c.to.(answers)
	return ch
}

// Cancel drops a pending call's answer and tells the worker (notifications/cancelled with
// the worker's id); a call no longer pending is left as it is, and the worker told nothing.
func (c *Call) Cancel(reason string) {
	if c.Abandon() {
		c.TellCancelled(reason)
	}
}

// Abandon drops the call without telling the worker, reporting whether it was still pending:
// if it was, its answer is never delivered; if not, it has been or is being delivered.
func (c *Call) Abandon() (pending bool) { return c.p.abandon(c.workerID) }

// TellCancelled writes notifications/cancelled for the call (the worker's id, and reason
// unless empty), leaving it pending: an answer that still comes is delivered.
func (c *Call) TellCancelled(reason string) {
	params := map[string]any{"requestId": c.workerID}
	if reason != "" {
		params["reason"] = reason
	}
	_ = c.p.Write(context.Background(), jsonrpc.Notification("notifications/cancelled", params))
}

// A Recipient takes the answer to a call sent to it (Send).
type Recipient interface {
	// Deliver runs at most once, never after Abandon reported the call pending, on the
	// goroutine that has the answer: the worker's stdout reader, or its waiter. It must not
	// block, nor wait for anything that waits for this worker's reading or exit (Stop, a
	// write to the worker).
	Deliver(*jsonrpc.Message)
}

// RecipientFunc is a function as a Recipient.
type RecipientFunc func(*jsonrpc.Message)

func (f RecipientFunc) Deliver(m *jsonrpc.Message) { f(m) }

// answers is Result's buffer of one as a Recipient.
type answers chan *jsonrpc.Message

func (a answers) Deliver(m *jsonrpc.Message) { a <- m }

// Start starts the worker in a session (and process group) of its own, so that Stop reaches
// whatever it starts and it has no controlling terminal.
func Start(spec Spec) (_ *Process, err error) {
	if spec, err = spec.withDefaults(); err != nil {
		return nil, err
	}
	// The gateway keeps its ends of the pipes itself rather than through exec's helpers, so
	// that the process can be reaped even while something it started still holds stdout.
	// They, and the worker's cgroup, go again if the start fails.
	var opened []*os.File
	var cg *cgroup
	defer func() {
		if err != nil {
			closeAll(opened...)
			if cg != nil {
				_ = cg.remove()
			}
		}
	}()
	pipe := func() (r, w *os.File) {
		if err == nil {
			if r, w, err = os.Pipe(); err == nil {
				opened = append(opened, r, w)
			}
		}
		return r, w
	}
	inR, inW := pipe()
	outR, outW := pipe()
	errR, errW := pipe()
	// The credential is the first stdin line with CredentialStdin, else on a pipe.
	var credLine []byte
	var credR, credW *os.File
	if spec.CredentialStdin && spec.Credential != nil {
		credLine = append(slices.Clip(spec.Credential), '\n')
	} else if spec.Credential != nil {
		credR, credW = pipe()
	}
	if err != nil {
		return nil, err
	}
	cmd, cg, err := command(spec, inR, outW, errW, credR)
	if err != nil {
		return nil, err
	}
	if err := startTracked(cmd); err != nil {
		return nil, fmt.Errorf("starting worker %s: %w", spec.Path, err)
	}
	if cg != nil {
		cg.fd.Close() // again in remove: a second Close does nothing
	}
	closeAll(inR, outW, errW, credR) // a nil credR's Close does nothing
	if credW != nil {
		go handOver(credW, spec.Credential, spec.WriteTimeout, spec.Logger)
	}
	// The Process keeps none of the environment, which may name secrets, and of the
	// credential only copies to redact with.
	secrets := secretSpellings(spec.Credential, spec.Secrets)
	cmd.Env, spec.Env, spec.Credential, spec.Secrets = nil, nil, nil, nil

	p := &Process{spec: spec, log: spec.Logger, cmd: cmd, stdin: inW, pending: make(map[int64]*Call),
		secrets: secrets, cgroup: cg, logged: newLogLimit(), exited: make(chan struct{}), done: make(chan struct{}),
		turn: make(chan struct{}, 1)}
	if credLine != nil {
		// The turn to write is the credential's before anyone can ask for it: every line sent
		// meanwhile waits behind it (stdin.go).
		p.turn <- struct{}{}
		go p.handOverLine(credLine)
	}
	stdoutDone := make(chan struct{})
	go func() {
		eof := p.readStdout(outR)
		close(stdoutDone)
		if eof {
			p.stopWithoutStdout()
		}
	}()
	go p.readStderr(errR)
	// The exit is awaited on the worker's pidfd, in the runtime's poller (exitwait_linux.go).
	go func() { awaitExit(cmd.Process.Pid); p.wait(stdoutDone, outR) }()
	return p, nil
}

// withDefaults is spec with its zero settings at their defaults; an error for a credential
// that cannot be handed over as spec says.
func (spec Spec) withDefaults() (Spec, error) {
	if spec.StopGrace <= 0 {
		spec.StopGrace = DefaultStopGrace
	}
	if spec.WriteTimeout <= 0 {
		spec.WriteTimeout = DefaultWriteTimeout
	}
	spec.Logger = cmp.Or(spec.Logger, slog.New(slog.DiscardHandler))
	if spec.CredentialStdin && bytes.ContainsAny(spec.Credential, "\r\n") {
		// Nothing of the credential itself goes into the error, which is logged.
		return spec, errors.New("the worker credential contains a line break, so it cannot be handed over as the first line of the worker's stdin")
	}
	return spec, nil
}

// command is the worker's command on the given standard streams, with its Sandbox, Caps and
// RunAs applied, and cred, if not nil, as descriptor 3. It returns the worker's cgroup when
// Caps.Cgroup is set.
func command(spec Spec, stdin, stdout, stderr, cred *os.File) (*exec.Cmd, *cgroup, error) {
	path, args := spec.Path, spec.Args
	if spec.Sandbox != nil {
		path, args = spec.Sandbox.Bwrap, spec.Sandbox.args(spec.Path, spec.Args)
	}
	path, argv0, args := spec.Caps.wrap(path, args)
	cmd := exec.Command(path, args...)
	if argv0 != "" {
		cmd.Args[0] = argv0
	}
	cmd.Env = spec.Env
	cmd.Stdin, cmd.Stdout, cmd.Stderr = stdin, stdout, stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Pdeathsig: syscall.SIGKILL}
	var cg *cgroup
	if spec.Caps != nil && spec.Caps.Cgroup != nil {
		var err error
		if cg, err = spec.Caps.Cgroup.create(spec.Caps); err != nil {
			return nil, nil, err
		}
		// The worker starts in its cgroup (clone3 CLONE_INTO_CGROUP): nothing of it runs uncapped.
		cmd.SysProcAttr.UseCgroupFD, cmd.SysProcAttr.CgroupFD = true, int(cg.fd.Fd())
	}
	if spec.RunAs != nil {
		cmd.SysProcAttr.Credential = spec.RunAs.credential()
		cmd.Env = spec.RunAs.env(cmd.Env)
	}
	if cred != nil {
		cmd.ExtraFiles = []*os.File{cred} // descriptor 3
		cmd.Env = append(slices.Clip(cmd.Env), CredentialFDEnv+"=3")
	}
	return cmd, cg, nil
}

func closeAll(fs ...*os.File) {
	for _, f := range fs {
		f.Close()
	}
}

// Pid is the worker's process id (and its process group id).
func (p *Process) Pid() int { return p.cmd.Process.Pid }

// Done is closed once the worker has exited and every pending call has been answered.
func (p *Process) Done() <-chan struct{} { return p.done }

// AfterDone runs f once the worker is done (Done closed, pending calls failed), on the
// goroutine that waited for its exit, or at once on its own if it is done already: no
// goroutine parked on Done (docs/PERFORMANCE.md). f must not wait for what the end waits for.
func (p *Process) AfterDone(f func()) {
	p.mu.Lock()
	defer p.mu.Unlock()
	select {
	case <-p.done:
		go f()
	default:
		p.afterDone = append(p.afterDone, f)
	}
}

// runAfterDone runs what AfterDone registered; wait calls it once done is closed, after
// which AfterDone registers no more.
func (p *Process) runAfterDone() {
	p.mu.Lock()
	fs := p.afterDone
	p.afterDone = nil
	p.mu.Unlock()
	for _, f := range fs {
		f()
	}
}

// Err says why the worker exited; nil while it runs.
func (p *Process) Err() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.exitErr
}

// Closing reports whether the worker takes no more requests: it has exited, or is being
// stopped. Its pending calls are being, or have been, failed.
func (p *Process) Closing() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.closed
}

// Send writes a request to the worker under a fresh worker-side id; the answer gets req.ID
// back. ctx bounds only the wait for a turn to write. The answer goes to Result, or to to if
// not nil (then on the reading goroutine, and Result is nil).
func (p *Process) Send(ctx context.Context, req *jsonrpc.Message, to Recipient) (*Call, error) {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return nil, p.writeErr(ErrExited)
	}
	p.nextID++
	c := &Call{p: p, workerID: p.nextID, clientID: req.ID, to: to}
	if to == nil {
		c.to = make(answers, 1)
	}
	p.pending[c.workerID] = c
	p.mu.Unlock()

	out := *req
	out.ID = strconv.AppendInt(nil, c.workerID, 10)
	if err := p.Write(ctx, &out); err != nil {
		p.forget(c.workerID)
		return nil, err
	}
	return c, nil
}

// writeErr is err, ErrHung if the worker was stopped for not reading, or err naming the
// worker's refusal, so that a request after a fast refusal still learns its cause.
func (p *Process) writeErr(err error) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.hung {
		return ErrHung
	}
	if p.greetErr != nil {
		return fmt.Errorf("%w: %w", err, p.greetErr)
	}
	return err
}

// hang stops a worker whose stdin stayed full past WriteTimeout; wait fails its calls.
func (p *Process) hang() {
	p.mu.Lock()
	first := !p.hung
	p.hung, p.closed = true, true
	p.mu.Unlock()
	if first {
		p.log.Error("worker stopped reading its stdin; stopping it", "pid", p.Pid(), "write_timeout", p.spec.WriteTimeout.String())
		p.kill(syscall.SIGKILL)
	}
}

// maxGivenUp bounds the abandoned calls a Strict worker has not answered yet that are kept
// (givenUp); past it a corrupted answer to one fails the oldest pending call instead.
const maxGivenUp = 1024

// abandon removes the pending call of worker id id, reporting whether it was pending; a Strict
// worker's is kept among those given up on, whose answer is still to come.
func (p *Process) abandon(id int64) (pending bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	_, pending = p.pending[id]
	delete(p.pending, id)
	if pending && p.spec.Strict && len(p.givenUp) < maxGivenUp {
		if p.givenUp == nil {
			p.givenUp = make(map[int64]struct{})
		}
		p.givenUp[id] = struct{}{}
	}
	return pending
}

// forget removes the pending call of worker id id and returns it; nil if none is pending.
func (p *Process) forget(id int64) *Call {
	p.mu.Lock()
	defer p.mu.Unlock()
	c := p.pending[id]
	delete(p.pending, id)
	return c
}

// wait ends the worker once its process has exited.
func (p *Process) wait(stdoutDone <-chan struct{}, stdout *os.File) {
	err := p.cmd.Wait()
	// Whatever the worker left behind in its group goes with it: no orphans.
	_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
	untrack(p.cmd)
	close(p.exited)
	if err == nil {
		err = errors.New("worker exited")
	}
	// Descendants that left the worker's session, adopted by gemgate (a subreaper), go first:
	// one may hold stdout open.
	reaped := ReapOrphans()
	capHit := ""
	if p.cgroup != nil {
		// What is left in the worker's cgroup goes too; its counters say which cap ended it.
		capHit = p.cgroup.capHit()
		if err := p.cgroup.remove(); err != nil {
			p.log.Warn("worker cgroup left behind", "error", err.Error())
		}
	}
	select {
	case <-stdoutDone:
	case <-time.After(p.spec.StopGrace):
		// Held open by a process gemgate cannot reap: the calls fail below without it.
		p.stdoutCut.Store(true)
		stdout.Close()
		<-stdoutDone
		p.log.Warn("worker exited but its stdout stayed open, held by a process it left behind; closed it", "pid", p.cmd.Process.Pid)
	}

	p.mu.Lock()
	p.closed = true
	if p.hung {
		err = fmt.Errorf("%w for %v; stopped (%v)", ErrHung, p.spec.WriteTimeout, err)
	}
	p.exitErr = err
	pending := p.pending
	p.pending = map[int64]*Call{}
	refusal, hung := p.greetErr, p.hung
	p.mu.Unlock()
	p.stdin.Close()
	msg, data := "worker exited before answering", map[string]any{"kind": "workerExit"}
	switch {
	case refusal != nil:
		msg, data = refusal.Error(), map[string]any{"kind": "workerRefused"}
	case hung:
		msg, data = "the worker stopped reading its input and was stopped", map[string]any{"kind": "workerHung"}
	case capHit != "":
		msg, data = "worker exited before answering: it reached its "+capHit+" cap", map[string]any{"kind": "workerExit", "cap": capHit}
		p.log.Warn("worker reached its "+capHit+" cap", "pid", p.cmd.Process.Pid)
	}
	for _, c := range pending {
		c.to.Deliver(jsonrpc.ErrorResponse(c.clientID, jsonrpc.CodeInternalError, msg, data))
	}
	if n := reaped; n > 0 && p.spec.Sandbox == nil {
		p.log.Warn("killed processes a worker had left behind outside its session", "count", n)
	} else if n > 0 {
		p.log.Debug("reaped the sandbox's init", "count", n)
	}
	p.log.Info("worker exited", "pid", p.cmd.Process.Pid, "status", err.Error())
	close(p.done)
	p.runAfterDone()
}

// Interrupt sends SIGINT to the worker's process group: the soft break before a stop.
func (p *Process) Interrupt() { p.kill(syscall.SIGINT) }

func (p *Process) kill(sig syscall.Signal) {
	select {
	case <-p.exited:
	default:
		if p.spec.Sandbox != nil && sig != syscall.SIGKILL {
			signalSandboxed(p.cmd.Process.Pid, sig, p.spec.Sandbox.Bwrap)
			return
		}
		_ = syscall.Kill(-p.cmd.Process.Pid, sig)
	}
}

// Stop ends the worker in stages: close its stdin and wait, SIGTERM its process group and
// wait, then SIGKILL. It returns once the worker is gone and its pending calls are failed.
func (p *Process) Stop() {
	p.stopOnce.Do(func() {
		p.mu.Lock()
		p.closed = true
		p.mu.Unlock()
		// Closing unblocks a write stuck on a worker that stopped reading stdin.
		p.stdin.Close()
		for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGKILL} {
			select {
			case <-p.exited:
				return
			case <-time.After(p.spec.StopGrace):
				p.kill(sig)
			}
		}
	})
	<-p.done
}

// CloseInheritedOnExec marks every descriptor of this process above stderr close-on-exec,
// so that none inherited from gemgate's parent (a listener, a secret) reaches a worker. Any
// program that calls Start calls it once at its start, before opening anything.
func CloseInheritedOnExec() {
	entries, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		return
	}
	for _, e := range entries {
		if fd, err := strconv.Atoi(e.Name()); err == nil && fd > 2 {
			syscall.CloseOnExec(fd)
		}
	}
}
