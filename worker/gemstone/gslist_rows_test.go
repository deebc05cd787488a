package gemstone

import "testing"

const gslistHeader = "  Status     Version   Owner        Pid  Port  Started      Type    Name\n" +
	"-------     --------- --------- -------- ----- ------------ ------      ----\n"

// A NetLDI's name is its starter's choice, and a row is read from both ends. mallory starts a
// NetLDI named "x Stone gs64stone": read from its end, its row would be a Stone gs64stone
// owned by mallory, making mallory the stone's owner and their NetLDI the one every user's
// gem, and login, goes through. A row with more words than a server row has is not read.
func TestNetLDINamedLikeAStoneRowIsNotRead(t *testing.T) {
	table := gslistHeader +
		"  OK         3.7.5     mallory    11112 40001 Aug 23 12:31  Netldi  x Stone gs64stone\n" +
		"  OK         3.7.5     mallory    11111 40000 Aug 23 12:31  Netldi  gs64ldi\n" +
		"  OK         3.7.5     gsadmin    96453 65166 Aug 23 12:31  Netldi  prodldi\n" +
		"  OK         3.7.5     gsadmin    60042 56820 Aug 20 08:53  Stone   gs64stone\n"
	servers := ParseGslist(table)
	if got := ChooseNetLDI(servers, "gs64stone"); got != "prodldi" {
		t.Errorf("ChooseNetLDI = %q, want prodldi (the stone owner's) or none; parsed %+v", got, servers)
	}
}

// Two rows for the stone (a lock left by another account, a stone not running): the owner is
// the running one's; and with two running, it is not known, and no NetLDI is chosen.
func TestStoneOwnerIsTheOneRunningStones(t *testing.T) {
	table := gslistHeader +
		"  killed     3.7.5     mallory    11113 40002 Aug 23 12:31  Stone   gs64stone\n" +
		"  OK         3.7.5     mallory    11111 40000 Aug 23 12:31  Netldi  gs64ldi\n" +
		"  OK         3.7.5     gsadmin    96453 65166 Aug 23 12:31  Netldi  prodldi\n" +
		"  OK         3.7.5     gsadmin    60042 56820 Aug 20 08:53  Stone   gs64stone\n"
	if got := ChooseNetLDI(ParseGslist(table), "gs64stone"); got != "prodldi" {
		t.Errorf("ChooseNetLDI = %q, want prodldi: a dead Stone row of mallory's listed before the running stone is not the stone", got)
	}
	two := table + "  OK         3.7.5     mallory    11114 40003 Aug 23 12:31  Stone   gs64stone\n"
	if got := ChooseNetLDI(ParseGslist(two), "gs64stone"); got != "" {
		t.Errorf("two running stones of one name: ChooseNetLDI = %q, want none", got)
	}
}

// The stone's row, for the global directory it runs under and for gemgate check's status and
// version, is the running one, as for its owner: a dead Stone row listed first (a lock left
// by another account) is passed over, and a row on its way is taken over a dead one.
func TestStoneRowIsTheRunningOne(t *testing.T) {
	dead := "  killed     3.7.4     mallory    11113 40002 Aug 23 12:31  Stone   gs64stone\n"
	starting := "  startup    3.7.5     gsstart    60041 56821 Aug 20 08:52  Stone   gs64stone\n"
	running := "  OK         3.7.5     gsadmin    60042 56820 Aug 20 08:53  Stone   gs64stone\n"
	other := "  OK         3.7.5     gsadmin    60043 56822 Aug 20 08:53  Stone   other\n"
	for _, tc := range []struct {
		table  string
		found  bool
		status string
		owner  string
	}{
		{dead + running, true, "OK", "gsadmin"},
		{dead + starting, true, "startup", "gsstart"},
		{starting + running, true, "OK", "gsadmin"},
		{dead, true, "killed", "mallory"},
		{other, false, "", ""},
	} {
		s, ok := stoneRow(ParseGslist(gslistHeader+tc.table), "gs64stone")
		if ok != tc.found || s.Status != tc.status || s.Owner != tc.owner {
			t.Errorf("stoneRow of\n%s= %+v, %v; want status %q owner %q", tc.table, s, ok, tc.status, tc.owner)
		}
	}
}
