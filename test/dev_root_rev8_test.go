package test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// rev8Dev starts `gemgate dev --json --worker-sandbox none` as root with env added. It returns
// the running gemgate (stopped at cleanup), or nil and everything gemgate printed when it
// refused to start.
func rev8Dev(t *testing.T, env ...string) (*gemgate, string) {
	t.Helper()
	cmd := exec.Command(gemgateBin, "dev", "--json", "--listen", "127.0.0.1:0", "--data-dir", t.TempDir(),
		"--log-format", "json", "--metrics-listen", "off", "--worker-sandbox", "none")
	cmd.Env = append(os.Environ(), env...)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr bytes.Buffer
	var mu sync.Mutex
	cmd.Stderr = writerFunc(func(p []byte) (int, error) { mu.Lock(); defer mu.Unlock(); return stderr.Write(p) })
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	g := &gemgate{cmd: cmd, logs: &logBuffer{}, done: make(chan error, 1)}
	first := make(chan []byte, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		sc.Buffer(nil, 1<<20)
		if sc.Scan() {
			first <- append([]byte(nil), sc.Bytes()...)
		}
		close(first)
		for sc.Scan() {
		}
		g.done <- cmd.Wait()
	}()
	select {
	case line, ok := <-first:
		if !ok {
			<-g.done
			mu.Lock()
			defer mu.Unlock()
			return nil, stderr.String()
		}
		if err := json.Unmarshal(line, &g.devInfo); err != nil {
			cmd.Process.Kill()
			t.Fatal(err)
		}
	case <-time.After(time.Minute):
		cmd.Process.Kill()
		t.Fatal("gemgate dev neither ready nor refused within a minute")
	}
	t.Cleanup(func() {
		cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-g.done:
		case <-time.After(30 * time.Second):
			cmd.Process.Kill()
		}
	})
	return g, ""
}

type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) { return f(p) }

// rev8AsOtherAccount runs a shell script as uid/gid 54321, an account that is neither root
// nor nobody.
func rev8AsOtherAccount(t *testing.T, script string, args ...string) {
	t.Helper()
	cmd := exec.Command("/bin/sh", append([]string{"-ec", script, "sh"}, args...)...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 54321, Gid: 54321}}
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("as uid 54321: %v\n%s", err, out)
	}
}

// The checks ownedDir makes on $TMPDIR/gemgate-dev-workers (nobody's, 0700, not a link)
// hold only for the name, at start: where TMPDIR itself may be changed by another account
// (writable by others without the sticky bit, or another account's own folder, as with
// `sudo -E` keeping a user's TMPDIR), that account moves nobody's folder aside and puts its
// own in its place, and alice's worker then reads notes that account wrote (and writes hers
// where it can delete or replace them). gemgate dev must refuse such a TMPDIR (its owner
// root, no write for others unless sticky), or keep the folder it checked.
func TestRev8DevWorkersFolderReplacedThroughAWritableTMPDIR(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Fatal("this test runs gemgate dev as root; CI runs as root")
	}
	for _, tc := range []struct {
		name  string
		setup func(dir string) error
	}{
		{"writable by others without sticky bit", func(dir string) error { return os.Chmod(dir, 0o777) }},
		{"another account's folder", func(dir string) error {
			if err := os.Chmod(dir, 0o755); err != nil {
				return err
			}
			return os.Chown(dir, 54321, 54321)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tmp := searchableTempDir(t)
			if err := tc.setup(tmp); err != nil {
				t.Fatal(err)
			}
			g, refused := rev8Dev(t, "TMPDIR="+tmp)
			if g == nil {
				t.Logf("refused, as it should: %s", refused)
				return
			}
			workers := filepath.Join(tmp, "gemgate-dev-workers")
			if g.WorkersDataDir != workers {
				t.Fatalf("workers_data_dir %q, want %s", g.WorkersDataDir, workers)
			}
			rev8AsOtherAccount(t, `cd "$1"
mv gemgate-dev-workers checked-by-gemgate
mkdir -p gemgate-dev-workers/alice
chmod 777 gemgate-dev-workers gemgate-dev-workers/alice
printf 'planted by uid 54321' > gemgate-dev-workers/alice/plan
chmod 666 gemgate-dev-workers/alice/plan`, tmp)
			cs := connect(t, g.URL, g.Tokens["alice"], nil)
			if got := text(callTool(t, cs, "read_note", map[string]any{"name": "plan"})); strings.Contains(got, "planted") {
				t.Errorf("alice's worker read a note another account (uid 54321) planted in a workers' folder it swapped in after gemgate's checks: %q", got)
			}
		})
	}
}

// gemgate dev hands its nobody workers $TMPDIR/gemgate-dev-workers without checking that
// nobody can reach it: with a TMPDIR only root may enter (root's own, as a TMPDIR under
// /root is), gemgate dev starts and says all is well, and the demo's first note fails. It
// should refuse at start, naming the folder nobody cannot reach (or put the folder where
// nobody can).
func TestRev8DevWorkersFolderNobodyCannotReach(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Fatal("this test runs gemgate dev as root; CI runs as root")
	}
	tmp := t.TempDir()
	if err := os.Chmod(tmp, 0o700); err != nil {
		t.Fatal(err)
	}
	g, refused := rev8Dev(t, "TMPDIR="+tmp)
	if g == nil {
		if !strings.Contains(refused, "gemgate-dev-workers") {
			t.Errorf("refused without naming the workers' folder:\n%s", refused)
		}
		return
	}
	cs := connect(t, g.URL, g.Tokens["alice"], nil)
	res := callTool(t, cs, "write_note", map[string]any{"name": "plan", "text": "ship it"})
	if got := text(res); res.IsError || !strings.Contains(got, "wrote note") {
		t.Errorf("gemgate dev started with workers' folder %s, which nobody cannot reach, and the demo's first note fails: %q", g.WorkersDataDir, got)
	}
}
