package worker

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// probeScript is a real worker, the host's shell, that tries what a hostile worker of alice's
// would in data_dir (the folder of its own that it is told, then bob's, data_dir itself, the
// issuer's state and a TLS key), and reports, in one message, "ok" or "no" for each try, then the names it
// sees in data_dir. It stays until gemgate closes its stdin.
const probeScript = `export D="$GEMGATE_DATA_DIR" U="$GEMGATE_USER_DATA_DIR"
case "$D,$U" in /?*,/?*/?*) ;; *) exit 1 ;; esac
mkdir -p "$U" 2>/dev/null # as the demo worker does
try() { if sh -c "$1" >/dev/null 2>&1; then printf ok; else printf no; fi; printf ' '; }
r=$(try 'echo mine > "$U/n" && test "$(cat "$U/n")" = mine'
try 'cat "$D/bob/note"'
try 'ls "$D/bob"'
try 'echo planted > "$D/bob/planted"'
try 'echo planted > "$D/planted"'
try 'mkdir "$D/carol"'
try 'cat "$D/.dev-issuer/key.pem"'
try 'cat "$GEMGATE_TEST_KEY"'
try 'cat "$D/shown/secret.key"'
printf '%s' "$(ls -A "$D" | tr '\n' ,)")
printf '{"jsonrpc":"2.0","method":"fs","params":{"found":"%s"}}\n' "$r"
exec cat >/dev/null
`

// dataDirFixture is a data_dir, not under /tmp (which the sandbox replaces), with bob's folder
// and note, the development issuer's state, and a TLS key beside it; it returns data_dir and
// the key's path.
func dataDirFixture(t *testing.T) (data, key string) {
	t.Helper()
	dir, err := os.MkdirTemp("/var/tmp", "gemgate-datadir-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	// Every account may pass through to data_dir, as through /var/tmp: the workers may run as
	// another one.
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	data, key = filepath.Join(dir, "data"), filepath.Join(dir, "tls.key")
	for _, d := range []string{filepath.Join(data, "bob"), filepath.Join(data, ".dev-issuer")} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	for _, f := range []string{filepath.Join(data, "bob", "note"), filepath.Join(data, ".dev-issuer", "key.pem"), key} {
		if err := os.WriteFile(f, []byte("secret"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return data, key
}

// probeDataDir launches probeScript (or command) as alice through l, as gemgate does, and
// returns what it found.
func probeDataDir(t *testing.T, l *CommandLauncher, key string, command ...string) string {
	t.Helper()
	l.Command = []string{"/bin/sh", "-c", probeScript}
	if command != nil {
		l.Command = command
	}
	l.Env = []string{"GEMGATE_TEST_KEY=" + key}
	ln, err := l.Launch(context.Background(), Identity{User: "alice", Subject: "alice-sub"})
	if err != nil {
		t.Fatal(err)
	}
	rec := &recorder{}
	ln.OnMessage, ln.StopGrace = rec.add, 200*time.Millisecond
	p, err := Start(ln.Spec)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Stop()
	var got struct{ Found string }
	json.Unmarshal(firstMessage(t, rec, "fs"), &got)
	return got.Found
}

// The attack: alice's worker reads, lists and writes bob's folder of data_dir, writes data_dir
// itself, and reads gemgate's secrets. In the sandbox it writes its own folder and nothing
// else: data_dir shows alice's folder alone, read-only. The control, unsandboxed, reaches
// bob's note (the test can fail).
func TestSandboxShowsOnlyTheUsersFolderOfDataDir(t *testing.T) {
	bwrap := probe(t, nil)
	data, key := dataDirFixture(t)
	hidden := []string{key, filepath.Join(data, ".dev-issuer")}
	if got := probeDataDir(t, &CommandLauncher{DataDir: data}, key); !strings.HasPrefix(got, "ok ok ok ok ok ok ok ok ") {
		t.Fatalf("unsandboxed, the worker found %q: the control should reach everything", got)
	}
	for _, f := range []string{"planted", "bob/planted", "carol", "alice"} {
		os.RemoveAll(filepath.Join(data, f))
	}

	got := probeDataDir(t, &CommandLauncher{DataDir: data, Sandbox: &Sandbox{Bwrap: bwrap, Hidden: hidden}}, key)
	// Own note written; bob's note, bob's folder, writes to bob's folder and to data_dir, the
	// issuer's state and the TLS key refused; data_dir shows alice alone.
	if want := "ok no no no no no no no no alice,"; got != want {
		t.Errorf("the sandboxed worker of alice found %q, want %q", got, want)
	}
	for _, f := range []string{"planted", "bob/planted", "carol"} {
		if _, err := os.Lstat(filepath.Join(data, f)); err == nil {
			t.Errorf("the sandboxed worker made %s in data_dir", f)
		}
	}
	own := filepath.Join(data, "alice")
	if b, err := os.ReadFile(filepath.Join(own, "n")); err != nil || string(b) != "mine\n" {
		t.Errorf("alice's note is not in her folder on the host: %q, %v", b, err)
	}
	if fi, err := os.Stat(own); err != nil || fi.Mode().Perm() != 0o700 {
		t.Errorf("alice's folder: %v, %v; want mode 0700", fi, err)
	}
}

// Under worker_user, gemgate makes the user's folder for the account, and the account's
// sandboxed worker writes it (bubblewrap binds it as that account), and nothing else.
func TestSandboxedAccountOwnsItsFolder(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Fatal("running a worker as another account needs root; CI runs as root")
	}
	nobody, err := LookupAccount("nobody")
	if err != nil {
		t.Fatal(err)
	}
	bwrap := probe(t, nobody)
	data, key := dataDirFixture(t)
	os.RemoveAll(data) // gemgate makes data_dir too, 0711 for the account to pass through
	got := probeDataDir(t, &CommandLauncher{DataDir: data, WorkerUser: "nobody", Sandbox: &Sandbox{Bwrap: bwrap}}, key)
	if want := "ok no no no no no no no no alice,"; got != want {
		t.Errorf("alice's worker as nobody found %q, want %q", got, want)
	}
	var st syscall.Stat_t
	if err := syscall.Stat(filepath.Join(data, "alice"), &st); err != nil || st.Uid != nobody.Uid || st.Mode&0o777 != 0o700 {
		t.Errorf("alice's folder: uid %d mode %#o (%v); want nobody's (%d), 0700", st.Uid, st.Mode&0o777, err, nobody.Uid)
	}
	if fi, err := os.Stat(data); err != nil || fi.Mode().Perm() != 0o711 {
		t.Errorf("data_dir: %v, %v; want mode 0711", fi, err)
	}
}

// A user's folder gemgate did not make must be a folder of the account the user's workers run
// as: a link (planted when every worker could write all of data_dir), a file, or another
// account's folder is refused at launch, and nothing is given away through it.
func TestUserFolderOfAnotherOrALinkIsRefused(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Fatal("giving folders to other accounts needs root; CI runs as root")
	}
	nobody, err := LookupAccount("nobody")
	if err != nil {
		t.Fatal(err)
	}
	bwrap := probe(t, nil)
	for _, tc := range []struct {
		name, want string
		user       string // worker_user
		plant      func(t *testing.T, own, target string)
	}{
		{"link", "not a folder", "", func(t *testing.T, own, target string) { must(t, os.Symlink(target, own)) }},
		{"link as nobody", "not a folder", "nobody", func(t *testing.T, own, target string) { must(t, os.Symlink(target, own)) }},
		{"file", "not a folder", "", func(t *testing.T, own, _ string) { must(t, os.WriteFile(own, nil, 0o600)) }},
		{"another account's", "belongs to uid 65534", "", func(t *testing.T, own, _ string) {
			must(t, os.Mkdir(own, 0o700))
			must(t, os.Chown(own, int(nobody.Uid), int(nobody.Gid)))
		}},
		{"gemgate's, for nobody", "not to nobody", "nobody", func(t *testing.T, own, _ string) { must(t, os.Mkdir(own, 0o700)) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			data, _ := dataDirFixture(t)
			target := filepath.Join(data, "bob")
			tc.plant(t, filepath.Join(data, "alice"), target)
			l := &CommandLauncher{Command: []string{"/bin/true"}, DataDir: data, WorkerUser: tc.user, Sandbox: &Sandbox{Bwrap: bwrap}}
			_, err := l.Launch(context.Background(), Identity{User: "alice"})
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("launch: %v; want a refusal saying %q", err, tc.want)
			}
			var st syscall.Stat_t
			if err := syscall.Stat(target, &st); err != nil || st.Uid != 0 {
				t.Errorf("bob's folder, a link's target, now belongs to uid %d (%v)", st.Uid, err)
			}
		})
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// What the operator asks for that holds data_dir (worker_sandbox_writable set to data_dir or
// above it, as before each user had a folder of their own) shows no other user's folder; what
// lies within it (here the worker's script, an absolute path of worker_command, and a folder
// of worker_sandbox_readable) still shows, with gemgate's secrets in it still hidden.
func TestDataDirStaysConfinedUnderWiderBinds(t *testing.T) {
	bwrap := probe(t, nil)
	data, key := dataDirFixture(t)
	script := filepath.Join(data, "probe.sh")
	must(t, os.WriteFile(script, []byte(probeScript), 0o644))
	shown := filepath.Join(data, "shown") // a folder the operator shows, with a secret hidden in it
	must(t, os.Mkdir(shown, 0o755))
	must(t, os.WriteFile(filepath.Join(shown, "secret.key"), []byte("secret"), 0o644))
	l := &CommandLauncher{DataDir: data, Sandbox: &Sandbox{Bwrap: bwrap, Writable: []string{data, filepath.Dir(data)}, Readable: []string{shown},
		Hidden: []string{key, filepath.Join(data, ".dev-issuer"), filepath.Join(data, "bob"), filepath.Join(shown, "secret.key")}}}
	got := probeDataDir(t, l, key, "/bin/sh", script)
	if want := "ok no no no no no no no no alice,probe.sh,shown,"; got != want {
		t.Errorf("the sandboxed worker of alice found %q, want %q", got, want)
	}
}
