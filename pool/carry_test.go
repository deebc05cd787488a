package pool

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/gemgate/gemgate/jsonrpc"
)

// A per-user worker dies (on_worker_exit: keep) and the next request starts its successor;
// its sessions stay, told nothing of the change. What they asked of the worker they share
// must not be lost with it: the successor is subscribed to every URI an attached session is
// subscribed to, and set to the most verbose logging level one asked for, before it takes
// their calls; resources/updated from it reaches the subscribers. A session that left
// meanwhile carries nothing over.
func TestSubscriptionsAndLevelsOutliveTheWorker(t *testing.T) {
	p := newTestPool(t, Settings{})
	a := attach(t, p, "alice", false, `{}`, newCaller(time.Time{}))
	b := attach(t, p, "alice", false, `{}`, newCaller(time.Time{}))
	gone := attach(t, p, "alice", false, `{}`, newCaller(time.Time{}))
	for _, step := range []struct {
		s      *session
		method string
		params map[string]string
	}{
		{a, "resources/subscribe", map[string]string{"uri": "u1"}},
		{b, "resources/subscribe", map[string]string{"uri": "u1"}},
		{b, "resources/subscribe", map[string]string{"uri": "u2"}},
		{gone, "resources/subscribe", map[string]string{"uri": "u3"}},
		{a, "logging/setLevel", map[string]string{"level": "warning"}},
		{gone, "logging/setLevel", map[string]string{"level": "debug"}},
	} {
		c, err := step.s.call(t, step.method, step.params)
		if err != nil {
			t.Fatal(err)
		}
		if got := answer(t, c); got != `{}` {
			t.Fatalf("%s %v: %s", step.method, step.params, got)
		}
	}
	pid := a.m.WorkerPid()
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the worker's death is seen", func() bool { return a.m.WorkerPid() != pid })
	gone.m.Detach()
	heard := record(t, a) // starts the successor: what it heard before this call
	if heard != "subscribe u1,subscribe u2,setLevel warning" && heard != "subscribe u2,subscribe u1,setLevel warning" {
		t.Errorf("the successor heard %q, want u1 and u2 subscribed and the level warning", heard)
	}
	if a.m.WorkerPid() == pid {
		t.Fatal("no successor")
	}
	answer(t, b.tool(t, "emit", map[string]any{"method": "notifications/resources/updated", "params": map[string]string{"uri": "u1"}}))
	for _, s := range []*session{a, b} {
		if n := notified(t, s.c, "notifications/resources/updated"); n != 1 {
			t.Errorf("session %s got %d resources/updated from the successor, want 1", s.id.Session, n)
		}
	}
	// The counts carried on: the successor hears the last unsubscribe of u1 only.
	for _, s := range []*session{a, b} {
		c, err := s.call(t, "resources/unsubscribe", map[string]string{"uri": "u1"})
		if err != nil {
			t.Fatal(err)
		}
		answer(t, c)
	}
	if got := record(t, a); got != heard+",unsubscribe u1" {
		t.Errorf("after both unsubscribed the successor heard %q", got)
	}
}

// A URI the predecessor took may be one its successor refuses (the resource is gone). The
// successor's refusal of the carried subscribe, which no client sent, uncounts the sessions
// that counted on it, and gemgate keeps nothing of the URI: a session that subscribes again
// is answered by the worker, and learns the refusal, instead of getting {} from gemgate.
func TestCarriedSubscribeRefusedBySuccessor(t *testing.T) {
	p := newTestPool(t, Settings{})
	a := attach(t, p, "alice", false, `{}`, newCaller(time.Time{}))
	gone := filepath.Join(t.TempDir(), "gone")
	uri := "refusedif:" + gone
	if got := subAnswer(t, a, "subscribe", uri); got != `{}` {
		t.Fatalf("subscribe: %s", got)
	}
	if err := os.WriteFile(gone, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	pid := a.m.WorkerPid()
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the worker's death is seen", func() bool { return a.m.WorkerPid() != pid })
	if heard := record(t, a); heard != "subscribe "+uri {
		t.Fatalf("the successor heard %q", heard)
	}
	s := a.m.s.Load()
	eventually(t, "the refused URI is let go", func() bool {
		s.mu.Lock()
		defer s.mu.Unlock()
		return len(s.w.subs)+len(s.w.subsOf)+len(s.w.heard)+len(s.w.subPending) == 0
	})
	if got := subAnswer(t, a, "subscribe", uri); !strings.Contains(got, "-32002") {
		t.Errorf("subscribing again: %s, want the successor's refusal", got)
	}
	if heard := record(t, a); heard != "subscribe "+uri+",subscribe "+uri {
		t.Errorf("the successor heard %q, want the carried subscribe and the session's own", heard)
	}
}

// Attacks on the carrying of a session's resource subscriptions and logging level from one
// worker to the next (slot.go retireLocked; carry.go carryLocked, tellCarried, heldLocked,
// takeOverLocked, unfollowSub; member.go Move). What a session was answered {} to and never
// undid must hold at whatever worker serves it next; nothing may be kept for sessions that
// left; the per-session cap must hold; a dying successor must neither hang nor lose the chain.

// killWorker kills s's worker and waits until the pool has taken it out of service.
func killWorker(t *testing.T, s *session) {
	t.Helper()
	pid := s.m.WorkerPid()
	if pid == 0 {
		t.Fatal("no worker to kill")
	}
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the dead worker is out of service", func() bool { return s.m.WorkerPid() == 0 })
}

// okCall sends a request and wants {} back.
func okCall(t *testing.T, s *session, method string, params map[string]string) {
	t.Helper()
	c, err := s.call(t, method, params)
	if err != nil {
		t.Fatalf("%s %v: %v", method, params, err)
	}
	if got := within(c); !isOK(got) {
		t.Fatalf("%s %v: %s", method, params, show(got))
	}
}

// stepUp moves s to its read-write worker.
func stepUp(t *testing.T, s *session) {
	t.Helper()
	rw := s.id
	rw.ReadOnly = false
	if err := s.m.Move(t.Context(), rw); err != nil {
		t.Fatal(err)
	}
	s.id = rw
}

// A session subscribed to a URI and set a logging level at its read-only worker; that worker
// died (on_worker_exit keep) and no request has started its successor yet when the session
// steps up. The session was told nothing of the death: its subscription and level must
// reach the read-write worker just as they would have from a live read-only worker.
func TestMoveAfterTheWorkerDiedCarries(t *testing.T) {
	p := newTestPool(t, Settings{WorkerPer: PerUser, OnWorkerExit: ExitKeep})
	a := attach(t, p, "alice", true, `{}`, newCaller(time.Time{}))
	okCall(t, a, "resources/subscribe", map[string]string{"uri": "u1"})
	okCall(t, a, "logging/setLevel", map[string]string{"level": "info"})
	killWorker(t, a)
	stepUp(t, a)
	if heard := record(t, a); heard != "subscribe u1,setLevel info" {
		t.Errorf("the read-write worker heard %q, want u1 subscribed and the level info: "+
			"a step-up after the read-only worker's death drops what the session held (detach reads only s.w, the dead worker is in s.prev)", heard)
	}
	if got := updatedFor(t, a, "u1", a.c); !got[0] {
		t.Errorf("after the step-up, resources/updated of u1 does not reach the session answered {} to its subscribe")
	}
}

// A worker died (on_worker_exit keep) and no successor has started; a session subscribed
// there and with a level leaves. gemgate must keep nothing for it: not its subscriptions,
// not its level, not the session itself (the Member and, through it, its Caller), however
// long the slot waits for its next request.
func TestDetachWithNoWorkerRunningKeepsNothing(t *testing.T) {
	p := newTestPool(t, Settings{OnWorkerExit: ExitKeep})
	stay := attach(t, p, "alice", false, `{}`, newCaller(time.Time{}))
	gone := attach(t, p, "alice", false, `{}`, newCaller(time.Time{}))
	for i := range 50 {
		okCall(t, gone, "resources/subscribe", map[string]string{"uri": "leak-" + strconv.Itoa(i)})
	}
	okCall(t, gone, "logging/setLevel", map[string]string{"level": "debug"})
	killWorker(t, stay)
	gm := gone.m
	gone.m.Detach()
	s := stay.m.s.Load()
	s.mu.Lock()
	var kept []string
	if prev := s.prev; prev != nil {
		for uri, subs := range prev.subs {
			if subs[gm] {
				kept = append(kept, uri)
			}
		}
		if _, in := prev.levels[gm]; in {
			kept = append(kept, "its level")
		}
		if prev.subsOf[gm] > 0 {
			kept = append(kept, "its subsOf count")
		}
	}
	s.mu.Unlock()
	if len(kept) > 0 {
		t.Errorf("the slot keeps %d entries for a session that left, until the next worker starts (slot.prev): %.80v", len(kept), kept)
	}
}

// The successor dies while gemgate subscribes it to its predecessor's URIs (tellCarried).
// The session's request must fail in bounded time, not hang, and the chain must hold: once
// a successor survives, it is subscribed and set to the session's level.
func TestSuccessorDyingDuringTellCarried(t *testing.T) {
	p := newTestPool(t, Settings{OnWorkerExit: ExitKeep})
	a := attach(t, p, "alice", false, `{}`, newCaller(time.Time{}))
	trap := filepath.Join(t.TempDir(), "die")
	uri := "dieif:" + trap
	okCall(t, a, "resources/subscribe", map[string]string{"uri": uri})
	okCall(t, a, "logging/setLevel", map[string]string{"level": "notice"})
	if err := os.WriteFile(trap, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	killWorker(t, a)
	ctx, cancel := context.WithTimeout(t.Context(), waitFor)
	defer cancel()
	for range 3 { // each starts a successor that dies on the carried subscribe
		c, err := a.m.Call(ctx, Request{Message: &jsonrpc.Message{ID: json.RawMessage(`"x"`), Method: "tools/call",
			Params: json.RawMessage(`{"name":"record","arguments":{}}`)}, Identity: a.id})
		if ctx.Err() != nil {
			t.Fatalf("a request after the death hung: %v", ctx.Err())
		}
		if err == nil {
			if got := within(c); got == nil || got.Error == nil {
				t.Fatalf("a successor that dies on the carried subscribe answered %s", show(got))
			}
		}
	}
	if err := os.Remove(trap); err != nil {
		t.Fatal(err)
	}
	eventually(t, "a successor survives", func() bool {
		c, err := a.call(t, "tools/call", map[string]any{"name": "record", "arguments": map[string]any{}})
		return err == nil && !isError(within(c))
	})
	if heard := record(t, a); heard != "subscribe "+uri+",setLevel notice" {
		t.Errorf("the surviving successor heard %q, want %s subscribed and the level notice", heard, uri)
	}
	if bad := subBookProblems(a.m.s.Load()); len(bad) > 0 {
		t.Errorf("the book: %v", bad)
	}
}

// A step-up races the session's end (its client closed it). Whichever wins, the session
// must end detached: a Member its transport let go must not stay attached to the read-write
// slot, holding its worker from idling out and receiving its notifications for nobody.
func TestMoveRacingDetachLeavesNoZombie(t *testing.T) {
	p := newTestPool(t, Settings{WorkerPer: PerUser})
	rwHolder := attach(t, p, "alice", false, `{}`, newCaller(time.Time{})) // keeps the read-write worker up
	for i := range 200 {
		a := attach(t, p, "alice", true, `{}`, newCaller(time.Time{}))
		rw := a.id
		rw.ReadOnly = false
		var wg sync.WaitGroup
		wg.Go(func() { _ = a.m.Move(t.Context(), rw) })
		wg.Go(func() { a.m.Detach() })
		wg.Wait()
		if s := a.m.s.Load(); s != nil {
			t.Fatalf("round %d: a session detached while it stepped up is attached again (to the slot with read-only %v): Move attaches after Detach cleared it",
				i, s.key.ReadOnly)
		}
		rwSlot := rwHolder.m.s.Load()
		rwSlot.mu.Lock()
		_, in := rwSlot.members[a.m]
		rwSlot.mu.Unlock()
		if in {
			t.Fatalf("round %d: the read-write slot counts a session that was detached", i)
		}
	}
}

// worker_per: session: a step-up starts the session's own read-write worker and stops its
// read-only one; the subscriptions and level go along.
func TestPerSessionMoveCarries(t *testing.T) {
	p := newTestPool(t, Settings{WorkerPer: PerSession})
	a := attach(t, p, "alice", true, `{}`, newCaller(time.Time{}))
	okCall(t, a, "resources/subscribe", map[string]string{"uri": "ps"})
	okCall(t, a, "logging/setLevel", map[string]string{"level": "error"})
	roPid := a.m.WorkerPid()
	stepUp(t, a)
	if heard := record(t, a); heard != "subscribe ps,setLevel error" {
		t.Errorf("the session's read-write worker heard %q, want ps subscribed and the level error", heard)
	}
	eventually(t, "the read-only worker stops", func() bool { return !alive(roPid) })
	if bad := subBookProblems(a.m.s.Load()); len(bad) > 0 {
		t.Errorf("the book: %v", bad)
	}
}

// The per-session cap holds across a step-up: a session at the cap at its read-only worker
// is at the cap at its read-write one, which refuses one more URI; and the cap stays exact
// when a subscribe in flight at the move is refused later (unfollowSub gives the place back).
func TestCapHoldsAcrossAMove(t *testing.T) {
	p := newTestPool(t, Settings{WorkerPer: PerUser})
	a := attach(t, p, "alice", true, `{}`, newCaller(time.Time{}))
	ro := attach(t, p, "alice", true, `{}`, newCaller(time.Time{}))
	for i := range MaxSubscriptionsPerCaller - 1 {
		okCall(t, a, "resources/subscribe", map[string]string{"uri": "c" + strconv.Itoa(i)})
	}
	late := subCall(t, a, "subscribe", "held:refused:late") // the 1000th, unanswered at the move
	eventually(t, "the read-only worker reads it", func() bool { return lastHeard(t, ro, "held:refused:late") == "subscribe held:refused:late" })
	stepUp(t, a)
	if got := within(subCall(t, a, "subscribe", "one-more")); !isError(got) {
		t.Fatalf("a subscribe beyond the cap after the move: %s, want refused", show(got))
	}
	answer(t, ro.tool(t, "release", map[string]any{}))
	if got := within(late); !isError(got) {
		t.Fatalf("the late subscribe: %s, want the read-only worker's refusal", show(got))
	}
	s := a.m.s.Load()
	eventually(t, "the late refusal is carried", func() bool {
		s.mu.Lock()
		defer s.mu.Unlock()
		return s.w.subsOf[a.m] == MaxSubscriptionsPerCaller-1
	})
	if got := within(subCall(t, a, "subscribe", "one-more")); !isOK(got) {
		t.Errorf("a subscribe within the cap once the refusal gave a place back: %s", show(got))
	}
	if got := within(subCall(t, a, "subscribe", "two-more")); !isError(got) {
		t.Errorf("a subscribe beyond the cap: %s, want refused", show(got))
	}
	if bad := subBookProblems(s); len(bad) > 0 {
		t.Errorf("the book: %v", bad)
	}
}

// A step-up and back: read-only → read-write → read-only. The session ends where it began,
// counted once there for what it held, the read-write worker keeps nothing for it, and the
// read-only worker's last line for the URI is a subscribe.
func TestMoveThereAndBack(t *testing.T) {
	p := newTestPool(t, Settings{WorkerPer: PerUser})
	a := attach(t, p, "alice", true, `{}`, newCaller(time.Time{}))
	ro := attach(t, p, "alice", true, `{}`, newCaller(time.Time{}))
	rwProbe := attach(t, p, "alice", false, `{}`, newCaller(time.Time{}))
	okCall(t, a, "resources/subscribe", map[string]string{"uri": "tb"})
	okCall(t, a, "logging/setLevel", map[string]string{"level": "debug"})
	roID := a.id
	stepUp(t, a)
	if err := a.m.Move(t.Context(), roID); err != nil {
		t.Fatal(err)
	}
	a.id = roID
	if a.m.s.Load() != ro.m.s.Load() {
		t.Fatal("not back at the read-only slot")
	}
	eventually(t, "the read-only worker is subscribed again", func() bool { return lastHeard(t, ro, "tb") == "subscribe tb" })
	if st := stateOf(ro, "tb"); !st.counted[a.m] || len(st.counted) != 1 || !st.heard {
		t.Errorf("at the read-only worker: counted %v, told %v", st.counted, st.heard)
	}
	eventually(t, "the read-write worker lets tb go", func() bool { return lastHeard(t, rwProbe, "tb") == "unsubscribe tb" })
	if st := stateOf(rwProbe, "tb"); st.subs+st.heardURIs+st.in != 0 {
		t.Errorf("the read-write worker keeps %d counted, %d told, %d in flight", st.subs, st.heardURIs, st.in)
	}
	s := a.m.s.Load()
	s.mu.Lock()
	level, set := s.w.levels[a.m]
	s.mu.Unlock()
	if !set || level != 0 {
		t.Errorf("the session's level back at the read-only worker: %d (set %v), want debug", level, set)
	}
	if bad := subBookProblems(s); len(bad) > 0 {
		t.Errorf("the read-only book: %v", bad)
	}
}

// The sessionless era: a Key.Sessionless worker dies while a sessionless request is attached
// with a subscription and a level. Every request gemgate writes a sessionless worker on its own
// must carry the revision's _meta (as Ask's do): its successor must not be sent a bare
// resources/subscribe or logging/setLevel it reads as of no revision.
func TestSessionlessSuccessorGetsTheRevisionsMeta(t *testing.T) {
	p, err := New(Options{Launcher: scriptLauncher{mode: "sessionless"}, InitTimeout: waitFor, Settings: Settings{OnWorkerExit: ExitKeep}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Close)
	ctx, cancel := context.WithTimeout(t.Context(), waitFor)
	defer cancel()
	m, _, err := p.Attach(ctx, Attach{Identity: alice, Caller: newCaller(time.Now()), Sessionless: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(m.Detach)
	meta := `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}`
	send := func(method, params string) *jsonrpc.Message {
		t.Helper()
		c, err := m.Call(ctx, Request{Message: &jsonrpc.Message{ID: json.RawMessage(`"r"`), Method: method, Params: json.RawMessage(params)}, Identity: alice})
		if err != nil {
			t.Fatalf("%s: %v", method, err)
		}
		got := within(c)
		if got == nil {
			t.Fatalf("%s: no answer", method)
		}
		return got
	}
	send("resources/subscribe", `{"uri":"sl",`+meta+`}`)
	send("logging/setLevel", `{"level":"info",`+meta+`}`)
	pid := m.WorkerPid()
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the dead worker is out of service", func() bool { return m.WorkerPid() == 0 })
	got := send("tools/list", `{`+meta+`}`) // starts the successor
	var r struct {
		Seen []string `json:"seen"`
	}
	if err := json.Unmarshal(got.Result, &r); err != nil {
		t.Fatalf("tools/list: %s", got.Encode())
	}
	var bare []string
	for _, s := range r.Seen {
		if !strings.HasSuffix(s, `@"2026-07-28"`) {
			bare = append(bare, s)
		}
	}
	if len(bare) > 0 {
		t.Errorf("the sessionless successor was written %v without the revision's _meta (tellCarried/reconcile write bare params); it saw %v", bare, r.Seen)
	}
	if !slices.ContainsFunc(r.Seen, func(s string) bool { return strings.HasPrefix(s, "resources/subscribe@") }) {
		t.Errorf("the sessionless successor was not subscribed at all: %v", r.Seen)
	}
}
