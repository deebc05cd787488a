package gateway

import (
	"context"
	"net/http"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/gemgate/gemgate/gateway/sessions"
)

func TestCloseLeavesNoWorkersOrGoroutines(t *testing.T) {
	http.DefaultClient.CloseIdleConnections()
	base := runtime.NumGoroutine()

	f := newFixture(t)
	var pids []int
	clients := []*client{f.client("alice-rw"), f.client("alice-ro"), f.client("bob-rw")}
	for _, c := range clients {
		c.open()
		pids = append(pids, c.sessionObj().member.WorkerPid())
	}
	st := clients[0].openStream()
	inflight := make(chan reply, 1)
	go func() {
		r, _ := clients[1].do(context.Background(), http.MethodPost, rpcBody("9", "tools/call", slowParams(60, false, nil)))
		inflight <- r
	}()
	eventually(t, 5*time.Second, "the call to be in flight", clients[1].sessionObj().inCall)

	f.gw.BeginShutdown()
	if !st.ended(2 * time.Second) {
		t.Error("BeginShutdown did not end the GET stream")
	}
	if r := f.client("alice-rw").rpc("1", "initialize", initParams("2025-06-18")); r.status != http.StatusServiceUnavailable {
		t.Errorf("initialize while shutting down: %d, want 503", r.status)
	}
	f.gw.Close()
	for _, pid := range pids {
		if alive(pid) {
			t.Errorf("worker %d outlived Close", pid)
		}
	}
	select {
	case r := <-inflight:
		if m := r.only(t); m.Error == nil || string(m.ID) != "9" {
			t.Errorf("the call in flight at Close got %s", r.body)
		}
	case <-time.After(5 * time.Second):
		t.Error("the call in flight at Close was never answered")
	}
	if n := metricValue(t, f, "gemgate_sessions_closed_total", "reason", sessions.ReasonShutdown); n != 3 {
		t.Errorf("sessions_closed_total{shutdown} = %v, want 3", n)
	}
	if n := metricValue(t, f, "gemgate_workers_running", "mode", "read_write"); n != 0 {
		t.Errorf("workers_running = %v after Close", n)
	}
	f.srv.Close()
	http.DefaultClient.CloseIdleConnections()
	const slack = 5
	deadline := time.Now().Add(5 * time.Second)
	for runtime.NumGoroutine() > base+slack && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	if n := runtime.NumGoroutine(); n > base+slack {
		buf := make([]byte, 1<<20)
		t.Errorf("%d goroutines after Close, baseline %d:\n%s", n, base, buf[:runtime.Stack(buf, true)])
	}
}

// TestCloseDuringInitialize: a session whose worker answers initialize after Close began
// must not be admitted, so no worker survives.
func TestCloseDuringInitialize(t *testing.T) {
	f := newFixture(t)
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, _ = f.client("alice-rw").do(context.Background(), http.MethodPost, rpcBody("1", "initialize", initParams("2025-06-18")))
		}()
	}
	eventually(t, 10*time.Second, "a first session", func() bool { return f.gw.Sessions() > 0 })
	f.gw.BeginShutdown()
	f.gw.Close()
	wg.Wait()
	if n := f.gw.Sessions(); n != 0 {
		t.Errorf("%d sessions after Close", n)
	}
	eventually(t, 5*time.Second, "no demo worker left", func() bool { return len(workerPids(t, "demo")) == 0 })
}

// A session its pool lets go while Close runs (its worker died then) is ended once, and no
// end starts after Close has begun: such an end used to add to the WaitGroup that Close was
// waiting on, which the race detector reports (and which could start an end after Close's
// wait had returned). The pool's call is repeated until Close returns, to meet every phase of it.
func TestSessionDetachedDuringCloseEndsOnce(t *testing.T) {
	for range 3 {
		f := newFixture(t)
		c := f.client("alice-rw")
		c.open()
		s := c.sessionObj()
		stop, running, hammered := make(chan struct{}), make(chan struct{}), make(chan int)
		go func() {
			close(running)
			n := 0
			for {
				// Detached at least once, whenever the goroutine runs: before Close (the
				// session ends for worker_exit), during it, or after it (a no-op). Every order
				// is allowed; which one is a matter of scheduling.
				s.Detached(sessions.ReasonWorkerExit)
				n++
				select {
				case <-stop:
					hammered <- n
					return
				default:
				}
			}
		}()
		<-running // the hammering runs beside Close, not only after it
		f.gw.Close()
		close(stop)
		<-hammered
		ended := metricValue(t, f, "gemgate_sessions_closed_total", "reason", sessions.ReasonShutdown) +
			metricValue(t, f, "gemgate_sessions_closed_total", "reason", sessions.ReasonWorkerExit)
		if ended != 1 {
			t.Errorf("the session was counted ended %v times, want 1", ended)
		}
	}
}
