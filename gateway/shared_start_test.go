package gateway

import (
	"context"
	"fmt"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gemgate/gemgate/pool"
	"github.com/gemgate/gemgate/worker"
)

// stallFirst blocks its first launch, as a token exchange against a slow issuer does, until
// release is closed (then it starts the demo worker) or its context ends; later launches
// start the demo worker.
type stallFirst struct {
	testLauncher
	first            atomic.Bool
	entered, release chan struct{}
}

func (l *stallFirst) Launch(ctx context.Context, id worker.Identity) (worker.Launch, error) {
	if l.first.CompareAndSwap(false, true) {
		close(l.entered)
		select {
		case <-l.release:
		case <-ctx.Done():
			return worker.Launch{}, fmt.Errorf("worker credential: exchange: %w", context.Cause(ctx))
		}
	}
	return l.testLauncher.Launch(ctx, id)
}

// Two clients of alice initialize at once (worker_per: user); the first starts the worker,
// the second waits for that start. The first client disconnects mid-exchange: the second,
// still connected, must get its initialize answered, not an empty 200 for an attach failed
// with the first request's context.Canceled (which attachError takes for its own client
// having gone).
func TestSecondInitializeIsAnsweredWhenTheFirstClientLeaves(t *testing.T) {
	l := &stallFirst{testLauncher: testLauncher{mode: "demo", dataDir: t.TempDir()}, entered: make(chan struct{}), release: make(chan struct{})}
	f := newFixture(t, func(o *Options) {
		o.Workers = l
		o.Pool = pool.Settings{WorkerPer: pool.PerUser}
	})
	a, b := f.client("alice-rw"), f.client("alice-rw")
	body := rpcBody("1", "initialize", initParams("2025-11-25"))
	ctxA, cancelA := context.WithCancel(context.Background())
	go a.do(ctxA, http.MethodPost, body)
	<-l.entered
	got := make(chan reply, 1)
	go func() {
		r, err := b.do(context.Background(), http.MethodPost, body)
		if err != nil {
			t.Error(err)
		}
		got <- r
	}()
	time.Sleep(300 * time.Millisecond) // b waits on a's start
	cancelA()
	close(l.release) // the start goes on for b, whose client is still there
	select {
	case r := <-got:
		if len(r.msgs) != 1 {
			t.Errorf("second client's initialize got HTTP %d with %d JSON-RPC messages (body %q): no answer", r.status, len(r.msgs), r.body)
		}
	case <-time.After(15 * time.Second):
		t.Fatal("second initialize not answered")
	}
}
