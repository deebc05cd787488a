//go:build linux

package worker

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gemgate/gemgate/jsonrpc"
)

// countedStdin counts the writes to a worker's stdin.
type countedStdin struct {
	stdinFile
	writes atomic.Int64
}

func (c *countedStdin) Write(b []byte) (int, error) {
	c.writes.Add(1)
	return c.stdinFile.Write(b)
}

// BenchmarkSharedWorkerRoundTrip is one call to a worker shared by N concurrent callers (as
// with worker_per: user) and its answer, reporting the writes to the worker's stdin per call:
// 1 when every line has a write of its own, less when queued lines share one.
//
//	go test ./worker -run '^$' -bench SharedWorkerRoundTrip -benchmem
func BenchmarkSharedWorkerRoundTrip(b *testing.B) {
	for _, n := range []int{1, 32} {
		b.Run(fmt.Sprintf("callers=%d", n), func(b *testing.B) {
			exe, err := os.Executable()
			if err != nil {
				b.Fatal(err)
			}
			stdin := &countedStdin{}
			p, err := Start(Spec{Path: exe, Env: append(os.Environ(), "GEMGATE_TEST_WORKER=echo"),
				wrapStdin: func(f stdinFile) stdinFile { stdin.stdinFile = f; return stdin }})
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(p.Stop)
			req := &jsonrpc.Message{ID: json.RawMessage(`1`), Method: "tools/call",
				Params: json.RawMessage(`{"name":"echo","arguments":{"text":"hello"}}`)}
			var left atomic.Int64
			left.Store(int64(b.N))
			b.ReportAllocs()
			b.ResetTimer()
			var wg sync.WaitGroup
			for range n {
				wg.Go(func() {
					for left.Add(-1) >= 0 {
						c, err := p.Send(context.Background(), req, nil)
						if err != nil {
							b.Error(err)
							return
						}
						select {
						case <-c.Result():
						case <-time.After(10 * time.Second):
							b.Error("no answer")
							return
						}
					}
				})
			}
			wg.Wait()
			b.StopTimer()
			b.ReportMetric(float64(stdin.writes.Load())/float64(b.N), "writes/call")
		})
	}
}
