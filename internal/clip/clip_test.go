package clip

import (
	"strings"
	"testing"
	"unicode/utf8"
)

func TestString(t *testing.T) {
	for _, tt := range []struct {
		in   string
		max  int
		want string
	}{
		{"short", 10, "short"},
		{"exactly10!", 10, "exactly10!"},
		{"0123456789abc", 10, "0123456789...(+3 more)"},
		{"ab" + "é" + "cd", 3, "ab...(+4 more)"}, // é is two bytes: never cut in half
		{"€€", 4, "€...(+3 more)"},
		{"x", 0, "...(+1 more)"},
	} {
		if got := String(tt.in, tt.max); got != tt.want {
			t.Errorf("String(%q, %d) = %q, want %q", tt.in, tt.max, got, tt.want)
		}
		if got := Bytes([]byte(tt.in), tt.max); got != tt.want {
			t.Errorf("Bytes(%q, %d) = %q, want %q", tt.in, tt.max, got, tt.want)
		}
	}
}

func FuzzString(f *testing.F) {
	f.Add("héllo wörld", 4)
	f.Fuzz(func(t *testing.T, s string, max int) {
		if max < 0 || max > 1<<16 {
			return
		}
		got := String(s, max)
		if len(s) <= max {
			if got != s {
				t.Fatalf("String(%q, %d) = %q changed a short string", s, max, got)
			}
			return
		}
		kept, _, ok := strings.Cut(got, "...(+")
		if !ok || len(kept) > max || !strings.HasPrefix(s, kept) {
			t.Fatalf("String(%q, %d) = %q", s, max, got)
		}
		if utf8.ValidString(s) && !utf8.ValidString(kept) {
			t.Fatalf("String(%q, %d) cut a UTF-8 sequence: %q", s, max, kept)
		}
	})
}

// Quote is what a message quotes of a client's field: JSON-quoted, so that no control
// character or quote of the field's own can change the message, and clipped to 100 bytes.
func TestQuote(t *testing.T) {
	long := strings.Repeat("é", 60) // 120 bytes
	for _, tt := range []struct{ in, want string }{
		{"tools/call", `"tools/call"`},
		{"a\"b\n\u2028<", `"a\"b\n\u2028\u003c"`},
		{long, `"` + strings.Repeat("é", 50) + `...(+20 more)"`},
	} {
		if got := Quote(tt.in); got != tt.want {
			t.Errorf("Quote(%q) = %s, want %s", tt.in, got, tt.want)
		}
	}
}
