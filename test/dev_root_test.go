package test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// gemgate dev as root on a host where no sandbox works (a container, bubblewrap not
// installed) runs with nothing more to install: its workers run as nobody, never as root,
// and the demo's notes go to a folder nobody owns, away from the dev data directory that
// holds the issuer's key. gemgate serve keeps refusing the same settings. No sandbox comes
// two ways: worker_sandbox none, and auto finding no bubblewrap (a PATH without it).
// gemgateBin is in a folder only root may enter, as `go run` leaves it, so the demo worker
// must start without a path nobody could search.
func TestDevAsRootWithoutSandboxRunsWorkersAsNobody(t *testing.T) {
	t.Parallel()
	if os.Geteuid() != 0 {
		t.Fatal("this test runs gemgate dev as root; CI runs as root")
	}
	if st, err := os.Stat(filepath.Dir(gemgateBin)); err != nil || st.Mode().Perm()&0o001 != 0 {
		t.Fatalf("gemgate's binary should be in a folder others cannot search: %v", err)
	}
	for _, tc := range []struct {
		name  string
		flags []string
		env   []string
	}{
		{"worker_sandbox none", []string{"--worker-sandbox", "none"}, nil},
		{"auto without bubblewrap", nil, []string{"PATH=/nonexistent"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			devWorkersRunAsNobody(t, tc.flags, tc.env)
		})
	}
	// serve refuses what dev allowed: an operator chooses the account.
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, gemgateBin, "serve", "--auth", "none", "--listen", "127.0.0.1:0", "--metrics-listen", "off",
		"--worker-sandbox", "none").CombinedOutput()
	if err == nil || !strings.Contains(string(out), "without worker_user") {
		t.Errorf("gemgate serve as root without a sandbox or worker_user: %v\n%s", err, out)
	}
}

func devWorkersRunAsNobody(t *testing.T, flags, env []string) {
	nobody, err := user.Lookup("nobody")
	if err != nil {
		t.Fatal(err)
	}
	nobodyUID, _ := strconv.Atoi(nobody.Uid)
	tmp := searchableTempDir(t)
	g := launch(t, launchOpts{
		Args: append([]string{"dev", "--json", "--listen", "127.0.0.1:0", "--data-dir", t.TempDir(), "--log-format", "json",
			"--metrics-listen", "off"}, flags...),
		Env: append([]string{"TMPDIR=" + tmp}, env...),
		FirstStdout: func(g *gemgate, line []byte) error {
			return json.Unmarshal(line, &g.devInfo)
		},
	})
	notes := filepath.Join(tmp, "gemgate-dev-workers")
	if g.WorkerUser != "nobody" || g.WorkersDataDir != notes {
		t.Errorf("dev --json says workers run as %q with data in %q, want nobody and %s", g.WorkerUser, g.WorkersDataDir, notes)
	}
	if !logShows(g, `"worker_user":"nobody"`, 10*time.Second) {
		t.Errorf("gemgate's log does not say that workers run as nobody:\n%s", g.logs)
	}

	cs := connect(t, g.devInfo.URL, g.devInfo.Tokens["alice"], nil)
	if got := text(callTool(t, cs, "whoami", nil)); !strings.Contains(got, "user=alice") {
		t.Fatalf("whoami: %q", got)
	}
	pids := childPIDs(g.cmd.Process.Pid)
	if len(pids) != 1 {
		t.Fatalf("gemgate has %d children, want its one worker", len(pids))
	}
	if uid := processUID(t, pids[0]); uid != nobodyUID {
		t.Errorf("the worker runs as uid %d, want nobody's %d", uid, nobodyUID)
	}
	if got := text(callTool(t, cs, "write_note", map[string]any{"name": "plan", "text": "ship it"})); !strings.Contains(got, "wrote note") {
		t.Fatalf("write_note: %q", got)
	}
	if got := text(callTool(t, cs, "read_note", map[string]any{"name": "plan"})); got != "ship it" {
		t.Errorf("read_note: %q, want the note written", got)
	}
	for _, p := range []string{notes, filepath.Join(notes, "alice", "plan")} {
		fi, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		if st := fi.Sys().(*syscall.Stat_t); int(st.Uid) != nobodyUID || fi.Mode().Perm()&0o077 != 0 {
			t.Errorf("%s: uid %d mode %v, want nobody's and closed to others", p, st.Uid, fi.Mode().Perm())
		}
	}
}

// A workers' folder that is not nobody's alone is refused, not used: its notes would be
// another account's to read or replace. So is a TMPDIR another account could change (it
// could move the folder aside after the checks and put its own in its place), and one
// nobody cannot enter.
func TestDevAsRootRefusesAWorkersFolderNotNobodys(t *testing.T) {
	t.Parallel()
	if os.Geteuid() != 0 {
		t.Fatal("this test runs gemgate dev as root; CI runs as root")
	}
	folder := func(tmp string) string { return filepath.Join(tmp, "gemgate-dev-workers") }
	for _, tc := range []struct {
		name, want string
		plant      func(tmp string) error
	}{
		{"owned by root", "not owned by nobody", func(tmp string) error { return os.Mkdir(folder(tmp), 0o700) }},
		{"a link", "not a directory", func(tmp string) error { return os.Symlink("/etc", folder(tmp)) }},
		{"open to others", "open to other accounts", func(tmp string) error {
			if err := os.Mkdir(folder(tmp), 0o777); err != nil {
				return err
			}
			if err := os.Chmod(folder(tmp), 0o777); err != nil {
				return err
			}
			nobody, err := user.Lookup("nobody")
			if err != nil {
				return err
			}
			uid, _ := strconv.Atoi(nobody.Uid)
			gid, _ := strconv.Atoi(nobody.Gid)
			return os.Chown(folder(tmp), uid, gid)
		}},
		{"TMPDIR writable by others without the sticky bit", "may be written by others", func(tmp string) error { return os.Chmod(tmp, 0o777) }},
		{"TMPDIR another account's", "belongs to uid 54321", func(tmp string) error { return os.Chown(tmp, 54321, 54321) }},
		{"TMPDIR nobody cannot enter", "cannot be entered by nobody", func(tmp string) error { return os.Chmod(tmp, 0o700) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			tmp := searchableTempDir(t)
			if err := tc.plant(tmp); err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			cmd := exec.CommandContext(ctx, gemgateBin, "dev", "--json", "--listen", "127.0.0.1:0", "--data-dir", t.TempDir(),
				"--metrics-listen", "off", "--worker-sandbox", "none")
			cmd.Env = append(os.Environ(), "TMPDIR="+tmp)
			out, err := cmd.CombinedOutput()
			if err == nil || !strings.Contains(string(out), tc.want) || !strings.Contains(string(out), "gemgate-dev-workers") {
				t.Errorf("gemgate dev: %v, want a refusal naming %q and the workers' folder\n%s", err, tc.want, out)
			}
		})
	}
}

// searchableTempDir is a temporary folder every account may search, as /tmp is.
func searchableTempDir(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "gemgate-tmp-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

// processUID is the real uid of process pid.
func processUID(t *testing.T, pid int) int {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatal(err)
	}
	for line := range strings.SplitSeq(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, "Uid:"); ok {
			uid, err := strconv.Atoi(strings.Fields(rest)[0])
			if err != nil {
				t.Fatal(err)
			}
			return uid
		}
	}
	t.Fatalf("no Uid line in /proc/%d/status", pid)
	return -1
}
