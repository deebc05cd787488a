package auth

import (
	"errors"
	"strings"
	"testing"
	"time"
)

// TestNumericDate reads exp as RFC 7519 defines a NumericDate, at the edges of what gemgate
// accepts: integers and fractions from 0 to 9999-12-31T23:59:59Z, nothing negative, nothing
// later, nothing that is not a JSON number.
func TestNumericDate(t *testing.T) {
	const outOfRange, notDate = "is out of range", "is not a NumericDate"
	tests := []struct {
		raw     string
		want    time.Time
		wantErr string // a substring of the ClaimError's reason; "" for none
	}{
		{"0", time.Unix(0, 0), ""},
		{"0.0", time.Unix(0, 0), ""},
		{"1", time.Unix(1, 0), ""},
		{"1700000000", time.Unix(1700000000, 0), ""},
		{"1700000000.5", time.Unix(1700000000, 500_000_000), ""},
		{"1.7e9", time.Unix(1700000000, 0), ""},
		{"9", time.Unix(9, 0), ""},
		{"9000000000", time.Unix(9000000000, 0), ""},
		{"9.5", time.Unix(9, 500_000_000), ""},
		{"253402300799", time.Unix(253402300799, 0), ""}, // 9999-12-31T23:59:59Z
		{"253402300799.0", time.Unix(253402300799, 0), ""},
		{"253402300800", time.Time{}, outOfRange},
		{"253402300799.5", time.Time{}, outOfRange},
		{"253402300800.0", time.Time{}, outOfRange},
		{"1e300", time.Time{}, outOfRange},
		{"99999999999999999999", time.Time{}, outOfRange},
		{"-1", time.Time{}, outOfRange},
		{"-0.5", time.Time{}, outOfRange},
		{"-1700000000", time.Time{}, outOfRange},
		{`"1700000000"`, time.Time{}, notDate},
		{"null", time.Time{}, notDate},
		{"true", time.Time{}, notDate},
		{"[1]", time.Time{}, notDate},
		{"{}", time.Time{}, notDate},
	}
	for _, tt := range tests {
		t.Run(tt.raw, func(t *testing.T) {
			cs, err := parseClaimSet([]byte(`{"exp":` + tt.raw + `}`))
			if err != nil {
				t.Fatalf("parseClaimSet: %v", err)
			}
			got, ok, err := cs.numericDate(claimExpiry)
			if !ok {
				t.Errorf("ok = false for a present claim")
			}
			if tt.wantErr == "" {
				if err != nil || !got.Equal(tt.want) {
					t.Errorf("numericDate(%s) = %v, %v; want %v", tt.raw, got, err, tt.want)
				}
				return
			}
			var ce *ClaimError
			if !errors.As(err, &ce) || !strings.Contains(ce.Reason, tt.wantErr) || ce.Claim != claimExpiry {
				t.Errorf("numericDate(%s) = %v, %v; want a ClaimError %q", tt.raw, got, err, tt.wantErr)
			}
			if !got.IsZero() {
				t.Errorf("numericDate(%s) returned the time %v with its error", tt.raw, got)
			}
		})
	}
	cs, err := parseClaimSet([]byte(`{"sub":"a"}`))
	if err != nil {
		t.Fatal(err)
	}
	if got, ok, err := cs.numericDate(claimExpiry); ok || err != nil || !got.IsZero() {
		t.Errorf("absent exp = %v, %v, %v; want zero, false, nil", got, ok, err)
	}
}

// TestClaimsDepthLimit: claims may nest maxClaimsDepth levels (the claims object itself
// being the first) and not one more, whether by arrays or by objects.
func TestClaimsDepthLimit(t *testing.T) {
	shapes := map[string]func(depth int) string{
		"arrays": func(depth int) string {
			return `{"sub":"a","x":` + strings.Repeat("[", depth-1) + strings.Repeat("]", depth-1) + `}`
		},
		"objects": func(depth int) string {
			return `{"sub":"a","x":` + strings.Repeat(`{"k":`, depth-2) + "{}" + strings.Repeat("}", depth-2) + `}`
		},
	}
	for name, build := range shapes {
		t.Run(name, func(t *testing.T) {
			at, over := build(maxClaimsDepth), build(maxClaimsDepth+1)
			if d := bracketDepth(at); d != maxClaimsDepth {
				t.Fatalf("built depth %d, want %d", d, maxClaimsDepth)
			}
			if err := checkOneObject([]byte(at)); err != nil {
				t.Errorf("depth %d refused: %v", maxClaimsDepth, err)
			}
			err := checkOneObject([]byte(over))
			var me *MalformedTokenError
			if !errors.As(err, &me) || !strings.Contains(me.Reason, "too deeply") {
				t.Errorf("depth %d: %v, want nested too deeply", maxClaimsDepth+1, err)
			}
		})
	}
}

// bracketDepth is the deepest nesting of s, which holds no brackets inside strings.
func bracketDepth(s string) int {
	depth, deepest := 0, 0
	for _, c := range s {
		switch c {
		case '{', '[':
			depth++
			deepest = max(deepest, depth)
		case '}', ']':
			depth--
		}
	}
	return deepest
}
