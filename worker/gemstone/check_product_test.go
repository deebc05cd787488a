package gemstone

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestCheckComparesTheProductWithTheStone: gemstone_home must be the product of the stone's
// version ($GEMSTONE/version.txt against gslist's), or every linked login fails with 4044.
func TestCheckComparesTheProductWithTheStone(t *testing.T) {
	for _, tc := range []struct {
		name, product string // version.txt's version; "" for no version.txt
		ok            bool
		want          string
	}{
		{"same", "3.7.5", true, "gemstone_home is GemStone 3.7.5 (version.txt), the stone's version"},
		{"other", "3.7.6", false, "error 4044"},
		{"patch level", "3.7.5.1", false, "error 4044"},
		{"none", "", false, "cannot read"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newStone(t, nil)
			if tc.product == "" {
				os.Remove(filepath.Join(s.home, "version.txt"))
			} else {
				writeVersionTxt(t, s.home, tc.product)
			}
			var found bool
			for _, f := range Check(context.Background(), s.config(t)) {
				if strings.Contains(f.What, tc.want) {
					found = true
					if f.OK != tc.ok || (!f.OK && !strings.Contains(f.Fix, "gemstone_home")) {
						t.Errorf("finding %+v, want OK %v and a fix naming gemstone_home", f, tc.ok)
					}
				}
			}
			if !found {
				t.Errorf("check says nothing with %q", tc.want)
			}
		})
	}
}
