package jsonrpc

import "testing"

// TestObjectStringAllocatesOnce: a plain string field (no escapes, valid UTF-8: every
// method, tool name and protocol version in practice) costs the string itself and nothing
// more; FuzzReadObject holds String to encoding/json's decoding of every string.
func TestObjectStringAllocatesOnce(t *testing.T) {
	o, err := ReadObject([]byte(`{"name":"echo_tool","v":"2026-07-28","esc":"a\"b\u00e9"}`), "params")
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct{ key, want string }{{"name", "echo_tool"}, {"v", "2026-07-28"}, {"esc", "a\"b\u00e9"}} {
		if s, ok, err := o.String(tt.key); err != nil || !ok || s != tt.want {
			t.Fatalf("String(%q) = %q, %v, %v; want %q", tt.key, s, ok, err, tt.want)
		}
	}
	for _, key := range []string{"name", "v"} {
		if n := testing.AllocsPerRun(20, func() { _, _, _ = o.String(key) }); n > 1 {
			t.Errorf("String(%q) allocates %v times, want 1", key, n)
		}
	}
}
