package gemstone

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// gslistPrinting is a product directory whose gslist prints table, as a real one would.
func gslistPrinting(t *testing.T, table string) string {
	t.Helper()
	home := t.TempDir()
	if err := os.Mkdir(filepath.Join(home, "bin"), 0o755); err != nil {
		t.Fatal(err)
	}
	script := "#!/bin/sh\ncat <<'EOF'\n" + table + "EOF\n"
	if err := os.WriteFile(filepath.Join(home, "bin", "gslist"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return home
}

// Each session's start asks gslist which NetLDI of the stone's owner runs now. When none
// does, or the stone is not listed (its owner unknown), the session does not start: without
// GEMSTONE_NRS_ALL, GemStone would fork the user's gem, and hand it the user's login, through
// whatever NetLDI is named gs64ldi, such as another account's that was passed over. An
// operator's own GEMSTONE_NRS_ALL is left alone.
func TestSessionNRSTakesOnlyTheStoneOwnersNetLDI(t *testing.T) {
	const header = "  Status     Version   Owner        Pid  Port  Started      Type    Name\n"
	for name, tc := range map[string]struct{ table, want, err string }{
		"the owner's": {header +
			"  OK         3.7.5     mallory    11111 40000 Aug 23 12:31  Netldi  gs64ldi\n" +
			"  OK         3.7.5     gsadmin    96453 65166 Aug 23 12:31  Netldi  prodldi\n" +
			"  OK         3.7.5     gsadmin    60042 56820 Aug 20 08:53  Stone   gs64stone\n",
			"GEMSTONE_NRS_ALL=#netldi:prodldi", ""},
		"only another's": {header +
			"  OK         3.7.5     mallory    11111 40000 Aug 23 12:31  Netldi  gs64ldi\n" +
			"  OK         3.7.5     gsadmin    60042 56820 Aug 20 08:53  Stone   gs64stone\n",
			"", "passed over: gs64ldi (owner mallory)"},
		"stone not running": {header +
			"  OK         3.7.5     mallory    11111 40000 Aug 23 12:31  Netldi  gs64ldi\n",
			"", "lists no stone gs64stone"},
	} {
		t.Run(name, func(t *testing.T) {
			t.Setenv("GEMSTONE_NRS_ALL", "")
			r := &Relay{Home: gslistPrinting(t, tc.table), GlobalDir: GlobalDir{Dir: t.TempDir()}, Stone: "gs64stone"}
			got, err := r.SessionNRS(context.Background())
			if got != tc.want || (tc.err == "") != (err == nil) || err != nil && !strings.Contains(err.Error(), tc.err) {
				t.Errorf("SessionNRS = %q, %v; want %q and an error with %q", got, err, tc.want, tc.err)
			}
			t.Setenv("GEMSTONE_NRS_ALL", "#netldi:operators")
			if got, err := r.SessionNRS(context.Background()); got != "" || err != nil {
				t.Errorf("with the operator's GEMSTONE_NRS_ALL: %q, %v; want it left alone", got, err)
			}
		})
	}
}
