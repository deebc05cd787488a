package sessionless

import (
	"errors"
	"testing"
)

// plainHeaderValue: visible ASCII, spaces and tabs pass as written; anything else must come
// base64-encoded, even when it equals the body's value; the base64 form decodes strictly.
func TestPlainHeaderValue(t *testing.T) {
	for _, tc := range []struct {
		in, want string
		err      error
	}{
		{"echo", "echo", nil},
		{"a b\tc", "a b\tc", nil},
		{"\u00e9cho", "", errMustBeEncoded},
		{"echo\u00a0", "", errMustBeEncoded},
		{"echo\x00", "", errMustBeEncoded},
		{"echo\x7f", "", errMustBeEncoded},
		{"=?base64?w6ljaG8=?=", "\u00e9cho", nil},
		{"=?base64?ZWNobw==?=", "echo", nil},
		{"=?base64?ZWNobx==?=", "", errBadBase64},
		{"=?base64?ZWNobw?=", "", errBadBase64},
		{"=?base64?ZWNobw==", "=?base64?ZWNobw==", nil}, // not the sentinel form: taken as written
	} {
		got, err := plainHeaderValue(tc.in)
		if got != tc.want || !errors.Is(err, tc.err) {
			t.Errorf("plainHeaderValue(%q) = %q, %v; want %q, %v", tc.in, got, err, tc.want, tc.err)
		}
	}
}
