package jsonrpc

import (
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"
)

// BenchmarkValidate: the one pass against the three it replaced, on a 1 MiB tools/call.
//
//	go test ./jsonrpc -run '^$' -bench Validate -benchmem
func BenchmarkValidate(b *testing.B) {
	msg := []byte(`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"echo","arguments":{"text":"` +
		strings.Repeat("x", 1<<20) + `"}}}`)
	b.Run("one pass", func(b *testing.B) {
		b.SetBytes(int64(len(msg)))
		for b.Loop() {
			if v, d := validate(msg, true); v != validJSON || d != 3 {
				b.Fatal(v, d)
			}
		}
	})
	b.Run("three passes", func(b *testing.B) {
		b.SetBytes(int64(len(msg)))
		for b.Loop() {
			if !utf8.Valid(msg) || CheckDepth(msg, MaxDepth) != nil || !json.Valid(msg) {
				b.Fatal("invalid")
			}
		}
	})
}
