package worker

import (
	"bufio"
	"bytes"
	"strconv"
	"strings"
	"testing"

	"github.com/gemgate/gemgate/jsonrpc"
)

// benchSizes are the payload sizes of the framing and remapping benchmarks.
var benchSizes = []struct {
	name string
	n    int
}{{"100B", 100}, {"10KiB", 10 << 10}, {"1MiB", 1 << 20}}

// echoRequest is a tools/call echo request whose payload makes the line about n bytes long.
func echoRequest(id string, n int) []byte {
	head := `{"jsonrpc":"2.0","id":` + id + `,"method":"tools/call","params":{"name":"echo","arguments":{"text":"`
	tail := `"}}}`
	return []byte(head + strings.Repeat("x", max(1, n-len(head)-len(tail))) + tail)
}

// echoAnswer is the worker's answer to it, about n bytes long.
func echoAnswer(id string, n int) []byte {
	head := `{"jsonrpc":"2.0","id":` + id + `,"result":{"content":[{"type":"text","text":"`
	tail := `"}]}}`
	return []byte(head + strings.Repeat("x", max(1, n-len(head)-len(tail))) + tail)
}

// BenchmarkFraming is one message across the NDJSON boundary: the line cut from a stream,
// parsed, encoded again and framed with its newline, as a message passes the gateway.
func BenchmarkFraming(b *testing.B) {
	for _, sz := range benchSizes {
		b.Run(sz.name, func(b *testing.B) {
			line := echoAnswer("7", sz.n)
			stream := bytes.Repeat(append(append([]byte(nil), line...), '\n'), 8)
			b.SetBytes(int64(len(line)))
			b.ReportAllocs()
			var sc *bufio.Scanner
			for i := 0; b.Loop(); i++ {
				if i%8 == 0 {
					sc = bufio.NewScanner(bytes.NewReader(stream))
					sc.Buffer(make([]byte, 0, 64<<10), DefaultMaxLineBytes+1)
				}
				if !sc.Scan() {
					b.Fatal("no line")
				}
				m, err := jsonrpc.Parse(sc.Bytes(), jsonrpc.Options{})
				if err != nil {
					b.Fatal(err)
				}
				out := append(m.Encode(), '\n')
				if len(out) < sz.n/2 {
					b.Fatalf("framed %d bytes", len(out))
				}
			}
		})
	}
}

// BenchmarkRemap is the id remapping of one call: the client's request parsed and sent on
// under the worker-side id, the worker's answer parsed and handed back under the client's id.
func BenchmarkRemap(b *testing.B) {
	for _, sz := range benchSizes {
		b.Run(sz.name, func(b *testing.B) {
			req := echoRequest(`"client-request-0001"`, sz.n)
			b.SetBytes(int64(2 * sz.n))
			b.ReportAllocs()
			var next int64
			for b.Loop() {
				m, err := jsonrpc.Parse(req, jsonrpc.Options{})
				if err != nil {
					b.Fatal(err)
				}
				next++
				out := *m
				out.ID = strconv.AppendInt(nil, next, 10)
				toWorker := out.Encode()

				// The worker's answer, under its id.
				ans, err := jsonrpc.Parse(echoAnswer(string(out.ID), sz.n), jsonrpc.Options{})
				if err != nil {
					b.Fatal(err)
				}
				if id, err := strconv.ParseInt(string(ans.ID), 10, 64); err != nil || id != next {
					b.Fatalf("answer id %s, want %d", ans.ID, next)
				}
				ans.ID = m.ID
				toClient := ans.Encode()
				if len(toWorker) == 0 || !bytes.HasPrefix(toClient, []byte(`{"jsonrpc":"2.0","id":"client-request-0001"`)) {
					b.Fatalf("remapped answer starts %q", toClient[:min(60, len(toClient))])
				}
			}
		})
	}
}

func TestBenchMessages(t *testing.T) {
	for _, sz := range benchSizes {
		for _, line := range [][]byte{echoRequest("1", sz.n), echoAnswer("1", sz.n)} {
			if _, err := jsonrpc.Parse(line, jsonrpc.Options{}); err != nil {
				t.Errorf("%s: %v", sz.name, err)
			}
			if d := len(line) - sz.n; d < 0 || d > 1 {
				t.Errorf("%s: line of %d bytes", sz.name, len(line))
			}
		}
	}
}
