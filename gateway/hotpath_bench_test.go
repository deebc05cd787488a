package gateway

import (
	"bytes"
	"strconv"
	"strings"
	"testing"

	"github.com/gemgate/gemgate/gateway/sessionless"
	"github.com/gemgate/gemgate/gateway/wire"
	"github.com/gemgate/gemgate/jsonrpc"
)

// The hot path of one tools/call, without the sockets and pipes: what the gateway does to a
// client's request body before its bytes go to the worker's stdin (forward), and to a
// worker's stdout line before its bytes go to the client (answer), in both eras. The system
// calls and goroutine hand-offs around them are measured by bench/gatewaybench and
// bench/run.sh; these pin the CPU and allocations of the message work itself.
//
//	go test ./gateway -run '^$' -bench 'Forward|Answer' -benchmem

var hotSizes = []struct {
	name string
	n    int
}{{"100B", 100}, {"1MiB", 1 << 20}}

func payload(n int) string { return strings.Repeat("x", n) }

func legacyCallBody(n int) []byte {
	return []byte(`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"echo","arguments":{"text":"` + payload(n) + `"}}}`)
}

func sessionlessCallBody(n int) []byte {
	return []byte(`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"echo","arguments":{"text":"` + payload(n) +
		`"},"_meta":{"` + sessionless.MetaProtocolVersion + `":"` + sessionless.Version + `","` + sessionless.MetaClientCapabilities + `":{},"` +
		sessionless.MetaClientInfo + `":{"name":"bench","version":"1"}}}}`)
}

func workerAnswerLine(n int) []byte {
	return []byte(`{"jsonrpc":"2.0","id":3,"result":{"content":[{"type":"text","text":"` + payload(n) + `"}]}}`)
}

// toWorker is what the pool and the worker do to a forwarded request: the worker's id in the
// client's place, one line.
func toWorker(msg *jsonrpc.Message, workerID int64) []byte {
	out := *msg
	out.ID = strconv.AppendInt(nil, workerID, 10)
	return append(out.Encode(), '\n')
}

// BenchmarkForward: a client's tools/call body to the bytes written to the worker's stdin.
func BenchmarkForward(b *testing.B) {
	for _, sz := range hotSizes {
		b.Run("legacy/"+sz.name, func(b *testing.B) {
			body := legacyCallBody(sz.n)
			b.SetBytes(int64(len(body)))
			b.ReportAllocs()
			for i := int64(0); b.Loop(); i++ {
				msg, err := jsonrpc.Parse(body, jsonrpc.Options{Client: true, Owned: true})
				if err != nil {
					b.Fatal(err)
				}
				f, he := readClientFields(msg)
				if he != nil || f.name != "echo" {
					b.Fatalf("fields %+v, %v", f, he)
				}
				if line := toWorker(msg, i); len(line) < sz.n {
					b.Fatalf("%d bytes to the worker", len(line))
				}
			}
		})
	}
}

// BenchmarkAnswer: a worker's stdout line to the bytes of the client's answer (an SSE stream,
// as loadgen and the SDK clients accept).
func BenchmarkAnswer(b *testing.B) {
	clientID := []byte(`"req-7"`)
	for _, sz := range hotSizes {
		b.Run("legacy/"+sz.name, func(b *testing.B) {
			line := workerAnswerLine(sz.n)
			b.SetBytes(int64(len(line)))
			b.ReportAllocs()
			for b.Loop() {
				m, err := jsonrpc.Parse(line, jsonrpc.Options{})
				if err != nil {
					b.Fatal(err)
				}
				m.ID = clientID
				if isToolError(m.Result) {
					b.Fatal("tool error")
				}
				body := m.Encode()
				frame := wire.AppendEvent(wire.AppendPrime(make([]byte, 0, len(body)+96), "0123456789ab_1_0", wire.SSERetry), "0123456789ab_1_1", body)
				if !bytes.HasSuffix(frame, []byte("}\n\n")) {
					b.Fatal("bad frame")
				}
			}
		})
		b.Run("sessionless/"+sz.name, func(b *testing.B) {
			line := workerAnswerLine(sz.n)
			b.SetBytes(int64(len(line)))
			b.ReportAllocs()
			for b.Loop() {
				m, err := jsonrpc.Parse(line, jsonrpc.Options{})
				if err != nil {
					b.Fatal(err)
				}
				m.ID = clientID
				resp := (&sessionless.Wait{Method: "tools/call"}).Result(m)
				if outcome := callOutcome("tools/call", resp); outcome != "ok" {
					b.Fatalf("outcome %s", outcome)
				}
				body := resp.Encode()
				frame := wire.AppendEvent(make([]byte, 0, len(body)+24), "", body)
				if !bytes.HasSuffix(frame, []byte("}\n\n")) {
					b.Fatal("bad frame")
				}
			}
		})
	}
}
