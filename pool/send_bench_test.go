package pool

import (
	"encoding/json"
	"fmt"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/gemgate/gemgate/jsonrpc"
)

// BenchmarkCallRoundTrip is one call through the pool to a running worker and its answer
// back, from N sessions of one user sharing its worker (worker_per: user): what goal 1 of
// issue 18 loads, without HTTP. One op is one call.
//
//	go test ./pool -run '^$' -bench CallRoundTrip -benchmem
func BenchmarkCallRoundTrip(b *testing.B) {
	for _, n := range []int{1, 32} {
		b.Run(fmt.Sprintf("sessions=%d", n), func(b *testing.B) {
			p, err := New(Options{Settings: Settings{WorkerPer: PerUser}, Launcher: scriptLauncher{}, InitTimeout: waitFor})
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(p.Close)
			members := make([]*Member, n)
			for i := range members {
				id := Identity{Issuer: "https://issuer.test", Subject: "sub-alice", User: "alice",
					Session: "s" + strconv.Itoa(i)}
				params := json.RawMessage(`{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"0"}}`)
				if members[i], _, err = p.Attach(b.Context(), Attach{Identity: id, Caller: newCaller(time.Now()), Params: params}); err != nil {
					b.Fatal(err)
				}
			}
			params := json.RawMessage(`{"name":"nothing","arguments":{}}`)
			var mu sync.Mutex
			left := b.N
			b.ReportAllocs()
			b.ResetTimer()
			var wg sync.WaitGroup
			for _, m := range members {
				wg.Go(func() {
					for {
						mu.Lock()
						if left == 0 {
							mu.Unlock()
							return
						}
						left--
						mu.Unlock()
						c, err := m.Call(b.Context(), Request{Message: &jsonrpc.Message{ID: json.RawMessage(`1`), Method: "tools/call", Params: params}})
						if err != nil {
							b.Error(err)
							return
						}
						select {
						case <-c.Result():
						case <-time.After(waitFor):
							b.Error("no answer")
							return
						}
					}
				})
			}
			wg.Wait()
		})
	}
}
