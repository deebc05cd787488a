package gemstone

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestGreeting(t *testing.T) {
	for _, tc := range []struct {
		name     string
		lines    []string
		done     bool
		wantKind string
	}{
		{"chatter then ready", []string{"successful login", `{"some":"json"}`, `{"gemgate":"ready","user":"alice","readOnly":false}`}, true, ""},
		{"error line", []string{"successful login", `{"gemgate":"error","kind":"login","message":"Invalid or missing aud"}`}, false, "login"},
		{"topaz 4065", []string{"GemStone: Error Nonfatal", "could not find server 'gs64stone' on host 'h' because service not found", "Error Category: 231169 [GemStone] Number: 4065  Arg Count: 1"}, false, "stoneUnreachable"},
		{"other topaz error", []string{"The userId/password combination is invalid or expired.", "Error Category: 231169 [GemStone] Number: 4051"}, false, "topaz"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewGreeting()
			var done bool
			var err error
			for _, l := range tc.lines {
				if done, err = g([]byte(l)); done || err != nil {
					break
				}
			}
			if done != tc.done {
				t.Errorf("done = %v", done)
			}
			var r *Refusal
			if tc.wantKind == "" {
				if err != nil {
					t.Errorf("err = %v", err)
				}
			} else if !errors.As(err, &r) || r.Kind != tc.wantKind {
				t.Errorf("err = %v, want kind %s", err, tc.wantKind)
			}
		})
	}
}

func TestAtLeast(t *testing.T) {
	for v, want := range map[string]bool{"3.7.5": true, "3.7.6": true, "3.7.4.1": false, "3.7.2": false, "4.0.0.a2": true, "3.7.5.1": true, "": false, "3.8": true} {
		if got := AtLeast(v, MinVersion); got != want {
			t.Errorf("AtLeast(%q) = %v", v, got)
		}
	}
}

func TestReadServiceINI(t *testing.T) {
	dir := t.TempDir()
	write := func(name, text string, mode os.FileMode) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(text), mode); err != nil {
			t.Fatal(err)
		}
		os.Chmod(p, mode)
		return p
	}
	if ini, err := ReadServiceINI(write("one.ini", "set user svc pass pw gemstone s1\n", 0o600)); err != nil || ini != (ServiceINI{"s1", "svc", true}) {
		t.Errorf("one-line form: %+v %v", ini, err)
	}
	if _, err := ReadServiceINI(write("open.ini", "set gemstone s\nset user u\nset password p\n", 0o644)); err == nil || !strings.Contains(err.Error(), "0600") {
		t.Errorf("0644 ini: %v", err)
	}
	if _, err := ReadServiceINI(write("half.ini", "set gemstone s\n", 0o600)); err == nil || !strings.Contains(err.Error(), "set user") {
		t.Errorf("incomplete ini: %v", err)
	}
}

func TestInstallScript(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "scripts")
	p1, err := InstallScript(dir)
	if err != nil {
		t.Fatal(err)
	}
	if p2, err := InstallScript(dir); err != nil || p2 != p1 {
		t.Errorf("second install: %s %v", p2, err)
	}
	if fi, _ := os.Stat(p1); fi.Mode().Perm() != 0o600 {
		t.Errorf("script mode %v", fi.Mode())
	}
	os.WriteFile(p1, []byte("run\nSystem stopSession: 1\n%\n"), 0o600)
	if _, err := InstallScript(dir); err == nil {
		t.Error("a tampered script was accepted")
	}
}

func TestCheck(t *testing.T) {
	problems := func(fs []Finding) (out []string) {
		for _, f := range fs {
			if !f.OK {
				out = append(out, f.What)
			}
		}
		return out
	}
	s := newStone(t, nil)
	if p := problems(Check(context.Background(), s.config(t))); len(p) != 0 {
		t.Errorf("a good stone has problems: %v", p)
	}
	for _, tc := range []struct {
		name    string
		cfg     map[string]any
		servers []string
		change  func(*Config, stone)
		want    string
	}{
		{"old", map[string]any{"version": "3.7.4.1"}, nil, nil, "older than 3.7.5"},
		{"no netldi", nil, []string{"Stone gs64stone"}, nil, "no running netldi"},
		{"stone down", nil, []string{"Netldi gs64ldi"}, nil, "finds no running stone"},
		{"wrong global dir", nil, nil, func(c *Config, s stone) {
			c.GlobalDir = "/nonexistent/gemstone"
			t.Setenv("GEMSTONE_GLOBAL_DIR", s.global)
		}, "so that is used"},
		{"no topaz", nil, nil, func(c *Config, _ stone) { c.Home = "/nonexistent" }, "no executable topaz"},
		{"stone name", nil, nil, func(c *Config, _ stone) { c.Stone = "other" }, "gemstone_stone is other"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newStone(t, tc.cfg, tc.servers...)
			c := s.config(t)
			if tc.change != nil {
				tc.change(&c, s)
			}
			if p := strings.Join(problems(Check(context.Background(), c)), "\n"); !strings.Contains(p, tc.want) {
				t.Errorf("problems %q lack %q", p, tc.want)
			}
		})
	}
}

// TestCheckReadsGslistStatuses: a live server listed as exists counts as running; a stone in
// recovery is there (the directory is right) but not serving yet.
func TestCheckReadsGslistStatuses(t *testing.T) {
	for _, tc := range []struct {
		name     string
		servers  []string
		problems string // "" for none
	}{
		{"exists", []string{"Stone gs64stone exists", "Netldi gs64ldi exists"}, ""},
		{"recovery", []string{"Stone gs64stone recovery", "Netldi gs64ldi"}, `not serving yet (gslist status "recovery")`},
		{"netldi exe deleted", []string{"Stone gs64stone", "Netldi gs64ldi exe deleted"}, "no running netldi"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newStone(t, nil, tc.servers...)
			var problems []string
			for _, f := range Check(context.Background(), s.config(t)) {
				if !f.OK {
					problems = append(problems, f.What)
				}
			}
			got := strings.Join(problems, "\n")
			if (tc.problems == "") != (got == "") || !strings.Contains(got, tc.problems) {
				t.Errorf("problems %q, want %q", got, tc.problems)
			}
		})
	}
}

func TestResolveGlobalDirAsksGslist(t *testing.T) {
	s := newStone(t, nil)
	g := ResolveGlobalDir(context.Background(), s.home, "", "gs64stone")
	if g.Found { // nothing configured: the product's defaults hold no fake stone
		t.Fatalf("found a stone under %s", g.Dir)
	}
	t.Setenv("GEMSTONE_GLOBAL_DIR", s.global)
	if g := ResolveGlobalDir(context.Background(), s.home, "/elsewhere", "gs64stone"); !g.Found || g.Dir != s.global || g.Note == "" {
		t.Errorf("resolved %+v", g)
	}
}
