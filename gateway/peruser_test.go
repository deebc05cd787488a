package gateway

import (
	"net/http"
	"strconv"
	"sync"
	"testing"

	"github.com/gemgate/gemgate/pool"
)

// With worker_per: user, one user's sessions share one worker per access mode; two users, or
// two modes, never share one.
func TestPerUserWorkersAreKeyedOnUserAndMode(t *testing.T) {
	f := newFixture(t, func(o *Options) { o.Pool = pool.Settings{WorkerPer: pool.PerUser} })
	open := func(token string) *client { c := f.client(token); c.open(); return c }
	a1, a2, a3 := open("alice-rw"), open("alice-rw"), open("alice-rw")
	aro, bob := open("alice-ro"), open("bob-rw")
	pid := func(c *client) int { return c.sessionObj().member.WorkerPid() }
	if pid(a1) != pid(a2) || pid(a2) != pid(a3) {
		t.Errorf("alice's read-write sessions use workers %d %d %d, want one", pid(a1), pid(a2), pid(a3))
	}
	if pid(aro) == pid(a1) || pid(bob) == pid(a1) || pid(bob) == pid(aro) {
		t.Errorf("workers shared across users or modes: alice rw %d, alice ro %d, bob %d", pid(a1), pid(aro), pid(bob))
	}
	if n := workersRunning(t, f); n != 3 {
		t.Errorf("%d workers, want 3", n)
	}
	// Every session of the shared worker gets its own answers, with the same ids at once.
	var wg sync.WaitGroup
	for i, c := range []*client{a1, a2, a3} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range 20 {
				text := "s" + strconv.Itoa(i) + "-" + strconv.Itoa(j)
				r := c.callTool(strconv.Itoa(j), "echo", map[string]any{"text": text})
				if r.status != http.StatusOK || toolText(t, r.only(t)) != text {
					t.Errorf("session %d call %d: %d %s", i, j, r.status, r.body)
				}
			}
		}()
	}
	wg.Wait()
	// A session's end detaches it; the worker stays for the others.
	a1.request(t.Context(), http.MethodDelete, "")
	if r := a2.callTool("99", "whoami", map[string]any{}); r.status != http.StatusOK || r.only(t).Error != nil {
		t.Fatalf("after another session ended: %d %s", r.status, r.body)
	}
}
