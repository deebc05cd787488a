package worker

import (
	"context"
	"encoding/json"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gemgate/gemgate/jsonrpc"
)

// With CredentialStdin the credential is the first line the worker reads, ahead of requests
// sent at once, and it is in no trace, no environment and no command line.
func TestCredentialStdinIsTheFirstLine(t *testing.T) {
	const canary = "credential-canary-5b1e"
	rec := &recorder{}
	var traceMu sync.Mutex
	var traced []string
	p := startSpec(t, "credline", Spec{Credential: []byte(canary), CredentialStdin: true, OnMessage: rec.add,
		OnTrace: func(dir string, line []byte) {
			traceMu.Lock()
			traced = append(traced, dir+" "+string(line))
			traceMu.Unlock()
		}})
	// Requests race the hand-over: each must queue behind the credential's line.
	calls := make(chan *Call, 8)
	var wg sync.WaitGroup
	for i := range cap(calls) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c, err := p.Send(context.Background(), &jsonrpc.Message{ID: json.RawMessage(strconv.Itoa(i + 1)), Method: "ping"}, nil)
			if err != nil {
				t.Errorf("Send: %v", err)
				return
			}
			calls <- c
		}()
	}
	wg.Wait()
	close(calls)
	for c := range calls {
		select {
		case m := <-c.Result():
			if m.Result == nil {
				t.Errorf("request %d: %s", c.workerID, m.Encode())
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("no answer to request %d", c.workerID)
		}
	}
	var got struct{ Line, FDEnv, Env string }
	json.Unmarshal(firstMessage(t, rec, "cred"), &got)
	if got.Line != canary || got.FDEnv != "" || got.Env != "" {
		t.Errorf("first stdin line %q, %s=%q, GEMGATE_CREDENTIAL=%q; want the credential on stdin only", got.Line, CredentialFDEnv, got.FDEnv, got.Env)
	}
	traceMu.Lock()
	for _, l := range traced {
		if strings.HasPrefix(l, "to_worker ") && strings.Contains(l, canary) {
			t.Errorf("the credential was traced: %q", l)
		}
	}
	traceMu.Unlock()
	notInProc(t, p.Pid(), canary)
}

// A credential with a line break would split into a short credential and a bogus request.
func TestCredentialStdinRefusesALineBreak(t *testing.T) {
	for _, cred := range []string{"secret\nline", "secret\r", "\n"} {
		p, err := Start(Spec{Path: testExe(t), Env: append(os.Environ(), "GEMGATE_TEST_WORKER=credline"), Credential: []byte(cred), CredentialStdin: true})
		if err == nil {
			p.Stop()
			t.Errorf("Start took the credential %q", cred)
			continue
		}
		if strings.Contains(err.Error(), "secret") {
			t.Errorf("the error names the credential: %v", err)
		}
	}
}
