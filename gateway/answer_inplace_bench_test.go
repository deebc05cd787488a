package gateway

import (
	"bytes"
	"testing"

	"github.com/gemgate/gemgate/gateway/wire"
	"github.com/gemgate/gemgate/jsonrpc"
)

// BenchmarkAnswerInPlace is BenchmarkAnswer's legacy SSE answer as the gateway now makes it:
// the worker's line, handed over by the line reader (its one copy is counted in the worker's
// BenchmarkLongLine), parsed in place, and encoded straight into its frame.
func BenchmarkAnswerInPlace(b *testing.B) {
	clientID := []byte(`"req-7"`)
	prime := wire.AppendPrime(nil, "0123456789ab_1_0", wire.SSERetry)
	for _, sz := range hotSizes {
		b.Run("legacy/"+sz.name, func(b *testing.B) {
			line := workerAnswerLine(sz.n)
			// A short line is copied out of the reader's buffer; a long one is handed over.
			opts := jsonrpc.Options{Owned: sz.n > 4<<10}
			b.SetBytes(int64(len(line)))
			b.ReportAllocs()
			for b.Loop() {
				m, err := jsonrpc.Parse(line, opts)
				if err != nil {
					b.Fatal(err)
				}
				m.ID = clientID
				if isToolError(m.Result) {
					b.Fatal("tool error")
				}
				frame := wire.PlaceEvent(m).Frame(prime, []byte("0123456789ab_1_1"))
				if !bytes.HasSuffix(frame, []byte("}\n\n")) {
					b.Fatal("bad frame")
				}
			}
		})
	}
}
