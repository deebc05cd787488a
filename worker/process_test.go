package worker

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/gemgate/gemgate/internal/clip"
	"github.com/gemgate/gemgate/jsonrpc"
)

// The test binary doubles as the worker: with GEMGATE_TEST_WORKER set, TestMain runs a small
// stdio JSON-RPC server in that mode instead of the tests.
func TestMain(m *testing.M) {
	if mode := os.Getenv("GEMGATE_TEST_WORKER"); mode != "" {
		fakeWorker(mode)
		os.Exit(0)
	}
	// As gemgate does at start: descendants that escape a worker come back to this process.
	if err := BecomeSubreaper(); err != nil {
		fmt.Fprintln(os.Stderr, "cannot become a child subreaper:", err)
		os.Exit(1)
	}
	os.Exit(m.Run())
}

func fakeWorker(mode string) {
	if mode == "stubborn" || mode == "forking" {
		signal.Ignore(syscall.SIGTERM)
	}
	if mode == "forking" {
		child := exec.Command("sleep", "300")
		child.Start()
		fmt.Printf("{\"jsonrpc\":\"2.0\",\"method\":\"child\",\"params\":{\"pid\":%d}}\n", child.Process.Pid)
	}
	fmt.Fprintln(os.Stderr, "fake worker starting in mode", mode)
	if extraMode(mode) {
		return
	}
	if mode == "held" {
		// Reads nothing until SIGUSR1, which it says it is ready for: the gateway's writes
		// fill the pipe and wait, as on a worker busy with something else.
		released := make(chan os.Signal, 1)
		signal.Notify(released, syscall.SIGUSR1)
		fmt.Println(`{"jsonrpc":"2.0","method":"held"}`)
		<-released
	}
	if mode == "slow" {
		// A slow reader behind a pipe of one page: the gateway's writes wait for it to read,
		// and callers pile up behind the turn to write. A line it cannot read as a request,
		// half of one or two run together, it reports.
		if _, err := unix.FcntlInt(0, unix.F_SETPIPE_SZ, 4096); err != nil {
			fmt.Fprintln(os.Stderr, "slow:", err)
			os.Exit(1)
		}
		fmt.Println(`{"jsonrpc":"2.0","method":"slow"}`)
	}
	switch mode {
	case "greet-ok", "strict":
		fmt.Println("login chatter: connecting to the stone")
		fmt.Println(`{"not":"a message"}`) // JSON, but still greeting-time chatter
		fmt.Println("READY")
	case "greet-exit":
		fmt.Println("login chatter: cannot reach the stone")
		os.Exit(4)
	case "greet-fail":
		fmt.Println("login chatter: connecting to the stone")
		fmt.Println("ERROR bad token")
		time.Sleep(time.Hour) // the gateway stops it
	}
	in := bufio.NewScanner(os.Stdin)
	in.Buffer(nil, 32<<20)
	out := bufio.NewWriter(os.Stdout)
	var lateID json.RawMessage // a "late" call, answered only once it is cancelled
	for in.Scan() {
		var req struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
			Params json.RawMessage `json:"params"`
		}
		if mode == "slow" {
			time.Sleep(200 * time.Microsecond)
		}
		if err := json.Unmarshal(in.Bytes(), &req); err != nil {
			if mode == "slow" {
				fmt.Fprintf(out, "{\"jsonrpc\":\"2.0\",\"method\":\"unreadable\",\"params\":{\"line\":%q}}\n", clip.Bytes(in.Bytes(), 120))
				out.Flush()
			}
			continue
		}
		if req.Method == "notifications/cancelled" && lateID != nil {
			// Answer the cancelled call anyway, then say so: the gateway must drop the answer.
			fmt.Fprintln(out, `{"jsonrpc":"2.0","id":`+string(lateID)+`,"result":{"late":true}}`)
			fmt.Fprintln(out, `{"jsonrpc":"2.0","method":"late-answer-sent"}`)
			out.Flush()
			lateID = nil
			continue
		}
		if req.ID == nil {
			continue
		}
		if req.Method == "late" {
			lateID = req.ID
			continue
		}
		switch {
		case req.Method == "crash":
			os.Exit(3)
		case req.Method == "hang":
			continue
		case req.Method == "corrupt":
			fmt.Fprintln(out, `{"jsonrpc":"2.0","id":`+string(req.ID)+`,"result":{"te\x00xt`)
			out.Flush()
			continue
		case req.Method == "longline":
			fmt.Fprintln(out, `{"jsonrpc":"2.0","method":"x","params":"`+strings.Repeat("a", DefaultMaxLineBytes)+`"}`)
			out.Flush()
			continue
		case req.Method == "badutf8":
			// Invalid UTF-8 inside JSON strings: still valid JSON to encoding/json.
			fmt.Fprint(out, "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/message\",\"params\":{\"data\":\"\xc3\x28\"}}\n")
			fmt.Fprint(out, "{\"jsonrpc\":\"2.0\",\"id\":"+string(req.ID)+",\"result\":{\"text\":\"caf\xe9 \xff\xfe ok\"}}\n")
			out.Flush()
			continue
		case req.Method == "wrongid":
			fmt.Fprintln(out, `{"jsonrpc":"2.0","id":99999,"result":{}}`)
			out.Flush()
			continue
		case req.Method == "notify":
			fmt.Fprintf(out, "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\",\"params\":{\"seen\":%s}}\n", req.ID)
			fmt.Fprintf(out, "{\"jsonrpc\":\"2.0\",\"id\":\"w1\",\"method\":\"roots/list\"}\n")
		}
		if mode == "chatter" {
			fmt.Fprintln(out, "chatter: this line is not JSON")
			fmt.Fprintln(out, "{not json either")
		}
		// The answer carries the id the worker saw, so tests can check the remapping.
		fmt.Fprintf(out, "{\"jsonrpc\":\"2.0\",\"id\":%s,\"result\":{\"seenID\":%q,\"params\":%s}}\n", req.ID, req.ID, orNull(req.Params))
		out.Flush()
	}
	out.Flush()
	if mode == "stubborn" {
		time.Sleep(time.Hour) // ignores the end of stdin and SIGTERM alike
	}
}

func orNull(b json.RawMessage) string {
	if b == nil {
		return "null"
	}
	return string(b)
}

type recorder struct {
	mu   sync.Mutex
	msgs []*jsonrpc.Message
}

func (r *recorder) add(m *jsonrpc.Message) { r.mu.Lock(); r.msgs = append(r.msgs, m); r.mu.Unlock() }
func (r *recorder) all() []*jsonrpc.Message {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]*jsonrpc.Message(nil), r.msgs...)
}

func startFake(t *testing.T, mode string, rec *recorder) *Process {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	spec := Spec{Path: exe, Env: append(os.Environ(), "GEMGATE_TEST_WORKER="+mode), StopGrace: 200 * time.Millisecond}
	if rec != nil {
		spec.OnMessage = rec.add
	}
	p, err := Start(spec)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Stop)
	return p
}

func call(t *testing.T, p *Process, id, method, params string) *jsonrpc.Message {
	t.Helper()
	req := &jsonrpc.Message{ID: json.RawMessage(id), Method: method}
	if params != "" {
		req.Params = json.RawMessage(params)
	}
	c, err := p.Send(context.Background(), req, nil)
	if err != nil {
		t.Fatalf("Send: %v", err)
	}
	select {
	case m := <-c.Result():
		return m
	case <-time.After(10 * time.Second):
		t.Fatalf("no answer to %s", method)
		return nil
	}
}

func TestIDsAreRemappedAndRestored(t *testing.T) {
	p := startFake(t, "echo", nil)
	for i, id := range []string{`"abc"`, `12345678901234567890`, `1.5`, `0`, `"🙂"`, `-7`} {
		m := call(t, p, id, "tools/call", `{"n":`+strconv.Itoa(i)+`}`)
		if string(m.ID) != id {
			t.Errorf("answer id = %s, want %s", m.ID, id)
		}
		var res struct {
			SeenID string          `json:"seenID"`
			Params json.RawMessage `json:"params"`
		}
		if err := json.Unmarshal(m.Result, &res); err != nil {
			t.Fatal(err)
		}
		if res.SeenID != strconv.Itoa(i+1) {
			t.Errorf("worker saw id %s, want the gateway's counter %d", res.SeenID, i+1)
		}
		if string(res.Params) != `{"n":`+strconv.Itoa(i)+`}` {
			t.Errorf("params = %s", res.Params)
		}
	}
}

func TestConcurrentCallsGetTheirOwnAnswers(t *testing.T) {
	p := startFake(t, "echo", nil)
	var wg sync.WaitGroup
	errs := make(chan error, 200)
	for i := 0; i < 200; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c, err := p.Send(context.Background(), &jsonrpc.Message{ID: json.RawMessage(`"c` + strconv.Itoa(i) + `"`), Method: "echo", Params: json.RawMessage(`{"i":` + strconv.Itoa(i) + `}`)}, nil)
			if err != nil {
				errs <- err
				return
			}
			m := <-c.Result()
			if string(m.ID) != `"c`+strconv.Itoa(i)+`"` || !strings.Contains(string(m.Result), `{"i":`+strconv.Itoa(i)+`}`) {
				errs <- fmt.Errorf("call %d got %s", i, m.Encode())
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

func TestChatterIsSkipped(t *testing.T) {
	p := startFake(t, "chatter", nil)
	for i := 0; i < 3; i++ {
		if m := call(t, p, strconv.Itoa(i+100), "ping", ""); m.Result == nil {
			t.Fatalf("no result: %s", snippet(m.Encode()))
		}
	}
}

// snippet is a message or line as a test's failure quotes it.
func snippet(b []byte) string { return clip.Bytes(b, 512) }

func TestWorkerMessagesGoToOnMessage(t *testing.T) {
	rec := &recorder{}
	p := startFake(t, "echo", rec)
	call(t, p, `"n1"`, "notify", "")
	msgs := rec.all()
	if len(msgs) != 2 {
		t.Fatalf("got %d worker messages, want 2", len(msgs))
	}
	if msgs[0].Method != "notifications/progress" || !msgs[0].IsNotification() {
		t.Errorf("first = %s", msgs[0].Encode())
	}
	if msgs[1].Method != "roots/list" || string(msgs[1].ID) != `"w1"` {
		t.Errorf("second = %s, want the worker's own id untouched", msgs[1].Encode())
	}
}

func TestExitFailsPendingCallsWithTheirIDs(t *testing.T) {
	p := startFake(t, "echo", nil)
	hung, err := p.Send(context.Background(), &jsonrpc.Message{ID: json.RawMessage(`"hung"`), Method: "hang"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	m := call(t, p, `"boom"`, "crash", "")
	for _, got := range []*jsonrpc.Message{m, <-hung.Result()} {
		var e jsonrpc.RPCError
		if err := json.Unmarshal(got.Error, &e); err != nil || e.Code != jsonrpc.CodeInternalError {
			t.Errorf("want a -32603 error, got %s", got.Encode())
		}
	}
	if string(m.ID) != `"boom"` {
		t.Errorf("id = %s", m.ID)
	}
	<-p.Done()
	if p.Err() == nil || !strings.Contains(p.Err().Error(), "exit status 3") {
		t.Errorf("Err = %v", p.Err())
	}
	if _, err := p.Send(context.Background(), &jsonrpc.Message{ID: json.RawMessage(`1`), Method: "ping"}, nil); err != ErrExited {
		t.Errorf("Send after exit = %v, want ErrExited", err)
	}
}

func TestCancelDropsTheLateAnswer(t *testing.T) {
	rec := &recorder{}
	p := startFake(t, "echo", rec)
	c, err := p.Send(context.Background(), &jsonrpc.Message{ID: json.RawMessage(`7`), Method: "late"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	c.Cancel("client went away")
	// The fake answers the cancelled call, then notifies; once the notification is in, the
	// answer before it has been read and must have been dropped.
	waitUntil(t, "the fake sent its late answer", func() bool {
		return slices.ContainsFunc(rec.all(), func(m *jsonrpc.Message) bool { return m.Method == "late-answer-sent" })
	})
	select {
	case m := <-c.Result():
		t.Fatalf("cancelled call got its late answer: %s", m.Encode())
	default:
	}
	for _, m := range rec.all() {
		if m.IsResponse() {
			t.Fatalf("the late answer went to OnMessage: %s", m.Encode())
		}
	}
	// The worker keeps serving.
	call(t, p, `8`, "ping", "")
}

func TestStopEscalatesAndLeavesNoChildren(t *testing.T) {
	rec := &recorder{}
	p := startFake(t, "forking", rec)
	waitUntil(t, "the worker reported its child", func() bool { return len(rec.all()) > 0 })
	msgs := rec.all()
	var params struct{ Pid int }
	json.Unmarshal(msgs[0].Params, &params)
	if !alive(params.Pid) {
		t.Fatalf("child %d not running before Stop", params.Pid)
	}
	start := time.Now()
	p.Stop() // stdin closed: ignored; SIGTERM: ignored; SIGKILL ends it
	if d := time.Since(start); d > 3*time.Second {
		t.Errorf("Stop took %v", d)
	}
	if alive(p.Pid()) {
		t.Errorf("worker %d still alive", p.Pid())
	}
	waitGone(t, params.Pid)
}

func TestWorkerExitTakesItsChildren(t *testing.T) {
	rec := &recorder{}
	p := startFake(t, "forking", rec)
	for i := 0; len(rec.all()) == 0 && i < 500; i++ {
		time.Sleep(10 * time.Millisecond)
	}
	var params struct{ Pid int }
	json.Unmarshal(rec.all()[0].Params, &params)
	call(t, p, `1`, "crash", "")
	<-p.Done()
	waitGone(t, params.Pid)
}

// alive reports whether pid is a live process (zombies count as gone).
func alive(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	fields := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+1:]))
	return len(fields) > 0 && fields[0] != "Z" && fields[0] != "X"
}

func waitGone(t *testing.T, pid int) {
	t.Helper()
	for i := 0; i < 300; i++ {
		if !alive(pid) {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Errorf("process %d outlived its worker", pid)
}

func greeting(line []byte) (bool, error) {
	switch {
	case line == nil:
		return false, fmt.Errorf("exited before it was ready")
	case string(line) == "READY":
		return true, nil
	case strings.HasPrefix(string(line), "ERROR "):
		return false, fmt.Errorf("cannot log in: %s", strings.TrimPrefix(string(line), "ERROR "))
	}
	return false, nil
}

func startSpec(t *testing.T, mode string, spec Spec) *Process {
	t.Helper()
	exe, _ := os.Executable()
	spec.Path, spec.Env, spec.StopGrace = exe, append(os.Environ(), "GEMGATE_TEST_WORKER="+mode), 200*time.Millisecond
	p, err := Start(spec)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Stop)
	return p
}

func TestGreetingPrecedesTraffic(t *testing.T) {
	p := startSpec(t, "greet-ok", Spec{Greeting: greeting})
	if m := call(t, p, `1`, "ping", ""); m.Result == nil {
		t.Fatalf("no result after greeting: %s", m.Encode())
	}
}

// A call sent while the worker refuses its greeting fails with the refusal as its reason. The
// refusal and the worker's exit race the Send: the call is either taken and then failed with
// a JSON-RPC error naming the refusal, under its own id, or, when the refusal and the exit win,
// refused by Send with ErrExited naming it (TestSendAfterRefusalNamesIt). Both are allowed;
// either way the reason is the refusal.
func TestGreetingRefusalFailsCallsWithItsReason(t *testing.T) {
	p := startSpec(t, "greet-fail", Spec{Greeting: greeting})
	c, err := p.Send(context.Background(), &jsonrpc.Message{ID: json.RawMessage(`"init"`), Method: "initialize", Params: json.RawMessage(`{}`)}, nil)
	switch {
	case err != nil:
		if !errors.Is(err, ErrExited) || !strings.Contains(err.Error(), "cannot log in: bad token") {
			t.Fatalf("Send: %v, want ErrExited naming the refusal", err)
		}
	default:
		var m *jsonrpc.Message
		select {
		case m = <-c.Result():
		case <-time.After(10 * time.Second):
			t.Fatal("the call sent to a worker refusing its greeting got no answer")
		}
		var e jsonrpc.RPCError
		json.Unmarshal(m.Error, &e)
		if string(m.ID) != `"init"` || !strings.Contains(e.Message, "cannot log in: bad token") {
			t.Fatalf("got %s", m.Encode())
		}
	}
	<-p.Done()
	if _, err := p.Send(context.Background(), &jsonrpc.Message{ID: json.RawMessage(`2`), Method: "ping"}, nil); err == nil ||
		!strings.Contains(err.Error(), "cannot log in: bad token") {
		t.Errorf("Send after the refusal: %v, want an error naming it", err)
	}
}

// A request sent after the worker refused and exited (a race a fast refusal wins) must still
// name the refusal: "worker has exited" alone hides the cause from the operator and the client.
func TestSendAfterRefusalNamesIt(t *testing.T) {
	p := startSpec(t, "greet-fail", Spec{Greeting: greeting})
	<-p.Done()
	_, err := p.Send(context.Background(), &jsonrpc.Message{ID: json.RawMessage(`"init"`), Method: "initialize", Params: json.RawMessage(`{}`)}, nil)
	if !errors.Is(err, ErrExited) || err == nil || !strings.Contains(err.Error(), "cannot log in: bad token") {
		t.Fatalf("Send after refusal: %v, want ErrExited naming the refusal", err)
	}
}

func TestStrictWorkerCorruptAnswerFailsItsCall(t *testing.T) {
	p := startSpec(t, "strict", Spec{Greeting: greeting, Strict: true, StrictError: "answer corrupted (defect 12345)"})
	for _, method := range []string{"corrupt", "wrongid"} {
		m := call(t, p, `"`+method+`"`, method, "")
		var e jsonrpc.RPCError
		json.Unmarshal(m.Error, &e)
		if string(m.ID) != `"`+method+`"` || e.Message != "answer corrupted (defect 12345)" {
			t.Errorf("%s: got %s", method, m.Encode())
		}
	}
	// The worker is still usable, and a good answer still reaches its own call.
	if m := call(t, p, `"ok"`, "ping", ""); m.Result == nil {
		t.Errorf("after corruption: %s", m.Encode())
	}
}

func TestGreetingIsAskedWhenStdoutEndsEarly(t *testing.T) {
	p := startSpec(t, "greet-exit", Spec{Greeting: greeting})
	<-p.Done()
	_, err := p.Send(context.Background(), &jsonrpc.Message{ID: json.RawMessage(`1`), Method: "ping"}, nil)
	if err == nil || !strings.Contains(err.Error(), "exited before it was ready") {
		t.Fatalf("Send after the greeting ended early: %v, want an error naming the greeting's refusal", err)
	}
}

// Invariant 8: a worker line longer than the limit does not grow the gateway's memory without
// end; the worker is stopped and its pending calls answered.
func TestOverlongLineStopsTheWorker(t *testing.T) {
	p := startSpec(t, "echo", Spec{})
	m := call(t, p, `"long"`, "longline", "")
	var e jsonrpc.RPCError
	if err := json.Unmarshal(m.Error, &e); err != nil || string(m.ID) != `"long"` {
		t.Fatalf("want an error answer with the caller's id, got %s", m.Encode())
	}
	select {
	case <-p.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("the worker was not stopped after an overlong line")
	}
}
