package main

import (
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"
	"time"
)

// viewClock is the stone's watch on the user's gem (Config.UserViewAbortMS): a gem whose
// transaction view outlives the limit under write load is terminated, and the next call the
// relay makes in it finds the session gone. Only a commit, an abort or a refresh in the
// user's session moves its view; other calls, pings among them, leave it where it was.
type viewClock struct {
	mu    sync.Mutex
	limit time.Duration
	timer *time.Timer
	ended bool // the stone terminated the gem
}

// watchView starts the clock once the user's session is ready; a stone without write load,
// or without the limit, never terminates the gem (a nil clock).
func (t *topazRun) watchView(s *session) *viewClock {
	if !t.c.WriteLoad || t.c.UserViewAbortMS <= 0 {
		return nil
	}
	k := &viewClock{limit: time.Duration(t.c.UserViewAbortMS) * time.Millisecond}
	k.timer = time.AfterFunc(k.limit, func() {
		k.mu.Lock()
		defer k.mu.Unlock()
		k.ended = true
		fmt.Fprintf(os.Stderr, "fakestone stone: session %s held the oldest commit record and did not answer SigAbort; "+
			"the stone terminated it after STN_GEM_ABORT_TIMEOUT_SECONDS (%v here): its uncommitted changes are lost\n", s.names[1], k.limit)
	})
	return k
}

// terminated says whether the stone has ended the gem.
func (k *viewClock) terminated() bool {
	if k == nil {
		return false
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.ended
}

// after is a call's return: a call that moved the view starts the clock again.
func (k *viewClock) after(s *session, line string) {
	if k == nil || !movesView(s, line) {
		return
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	if !k.ended {
		k.timer.Reset(k.limit)
	}
}

// movesView is whether a request gives the user's session a new view: the abort, commit and
// refresh tools, a tool that commits its change, or code that ends in a commit or an abort.
func movesView(s *session, line string) bool {
	var req struct {
		Method string `json:"method"`
		Params struct {
			Name      string         `json:"name"`
			Arguments map[string]any `json:"arguments"`
		} `json:"params"`
	}
	if json.Unmarshal([]byte(line), &req) != nil || req.Method != "tools/call" {
		return false
	}
	if req.Params.Name == "abort" || req.Params.Name == "refresh" {
		return true
	}
	if s.commitsDisabled {
		return false // every commit fails: the view stays
	}
	if code, _ := req.Params.Arguments["code"].(string); req.Params.Name == "execute_code" {
		code = strings.TrimSpace(code)
		return strings.HasSuffix(code, "System commitTransaction") || strings.HasSuffix(code, "System abortTransaction")
	}
	i := slices.IndexFunc(tools, func(t tool) bool { return t.name == req.Params.Name })
	return i >= 0 && (tools[i].name == "commit" || strings.Contains(tools[i].desc, ", commit"))
}
