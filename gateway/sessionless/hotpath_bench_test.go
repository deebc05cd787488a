package sessionless

import (
	"net/http"
	"strconv"
	"testing"

	"github.com/gemgate/gemgate/jsonrpc"
)

// BenchmarkForward: a client's tools/call of the era to the bytes written to a legacy worker's
// stdin (the core's BenchmarkForward has the legacy era's; the core's field reader is not in
// this one).
func BenchmarkForward(b *testing.B) {
	for _, sz := range []struct {
		name string
		n    int
	}{{"100B", 100}, {"1MiB", 1 << 20}} {
		b.Run("sessionless/"+sz.name, func(b *testing.B) {
			body := sessionlessCallBody(sz.n)
			r := sessionlessRequestFor(b)
			b.SetBytes(int64(len(body)))
			b.ReportAllocs()
			for i := int64(0); b.Loop(); i++ {
				msg, err := jsonrpc.Parse(body, jsonrpc.Options{Client: true, Owned: true})
				if err != nil {
					b.Fatal(err)
				}
				if !Is(r, msg) {
					b.Fatal("not sessionless")
				}
				mr, he := check(r, msg, testServed)
				if he != nil {
					b.Fatal(he)
				}
				fwd := legacyMessageOf(msg, mr.Params)
				if line := toWorker(fwd, i); len(line) < sz.n {
					b.Fatalf("%d bytes to the worker", len(line))
				}
			}
		})
	}
}

func sessionlessRequestFor(b *testing.B) *http.Request {
	r, err := http.NewRequest(http.MethodPost, "http://gw.test/mcp", nil)
	if err != nil {
		b.Fatal(err)
	}
	r.Header.Set(HeaderProtocolVersion, Version)
	r.Header.Set(HeaderMethod, "tools/call")
	r.Header.Set(HeaderName, "echo")
	return r
}

// toWorker is what the pool and the worker do to a forwarded request: the worker's id in the
// client's place, one line.
func toWorker(msg *jsonrpc.Message, workerID int64) []byte {
	out := *msg
	out.ID = strconv.AppendInt(nil, workerID, 10)
	return append(out.Encode(), '\n')
}
