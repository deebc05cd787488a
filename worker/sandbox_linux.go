package worker

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/gemgate/gemgate/internal/private"
)

// Sandbox confines a worker with bubblewrap (bwrap): its own PID namespace and /proc, so it
// sees no other process and no /proc/<pid>/environ but its own; the host's filesystem
// read-only; a private, empty /tmp; of the data directory, only its own user's folder; all
// capabilities dropped; and it dies with gemgate. Network and System V IPC stay shared:
// workers reach their backends (GemStone's shared page cache among them).
type Sandbox struct {
	Bwrap    string   // the bwrap executable
	Writable []string // host paths the worker may write (worker_sandbox_writable)
	Readable []string // host paths shown read-only over the private /tmp (the worker's executable, scripts)
	// Hidden are host paths the worker must not read: gemgate's own secrets (its TLS key,
	// config files, the development issuer's state). A file is covered by /dev/null (which
	// the sandbox's mounts without devices cannot read), a directory by an empty tmpfs, and
	// a missing path is skipped.
	Hidden []string
	// DataDir, if set, is shown as an empty read-only folder but for UserDir in it, writable:
	// the worker reaches its own user's files of data_dir and no other user's.
	DataDir, UserDir string
}

// baseArgs is the confinement every worker gets.
func baseArgs() []string {
	return []string{
		"--die-with-parent", // and so does everything in its PID namespace
		"--unshare-pid",
		"--ro-bind", "/", "/",
		"--dev", "/dev",
		"--proc", "/proc",
		"--tmpfs", "/tmp",
		"--cap-drop", "ALL",
	}
}

// args is bwrap's command line for one worker: path and args run inside the sandbox.
func (s *Sandbox) args(path string, args []string) []string {
	a := baseArgs()
	for _, p := range s.Readable {
		a = append(a, "--ro-bind-try", p, p)
	}
	for _, p := range s.Writable {
		a = append(a, "--bind", p, p)
	}
	// After the binds, so that none can show the rest of DataDir, but for what was asked for
	// in it (the worker's executable may lie there), shown again.
	var shown []string
	if s.DataDir != "" {
		a = append(a, "--tmpfs", s.DataDir, "--bind", s.UserDir, s.UserDir)
		for i, paths := range [][]string{s.Readable, s.Writable} {
			for _, p := range paths {
				if s.coveredByDataDir(p) {
					shown = append(shown, p)
					a = append(a, []string{"--ro-bind-try", "--bind"}[i], p, p)
				}
			}
		}
	}
	for _, p := range s.Hidden { // after the binds, so that a secret inside one stays hidden
		switch fi, err := os.Stat(p); {
		case err != nil, s.coveredByDataDir(p) && !slices.ContainsFunc(shown, func(d string) bool { return within(p, d) }):
		case fi.IsDir():
			a = append(a, "--tmpfs", p)
		default:
			a = append(a, "--ro-bind", "/dev/null", p)
		}
	}
	if s.DataDir != "" {
		// Last, once every mount point in it is made; the mounts within keep their own flags.
		a = append(a, "--remount-ro", s.DataDir)
	}
	a = append(a, "--", path)
	return append(a, args...)
}

// coveredByDataDir tells whether p is below DataDir but not in UserDir, hidden by DataDir's
// empty folder.
func (s *Sandbox) coveredByDataDir(p string) bool {
	return s.DataDir != "" && p != s.DataDir && within(p, s.DataDir) && !within(p, s.UserDir)
}

// within tells whether p is dir or below it.
func within(p, dir string) bool {
	rel, err := filepath.Rel(dir, p)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, "../")
}

// makeUserDir makes name, one user's folder in dataDir (mode 0700), for the account the
// user's workers run as (runAs; nil: gemgate's), and dataDir first if missing (0700, or 0711
// with runAs, whose bubblewrap must pass through it). A folder that exists must be a folder
// (not a link) of that account, or it is refused: it may have been planted when every worker
// could write all of dataDir. It is opened without following links and given away through
// that descriptor, so nothing swapped in its place is. dataDir must be gemgate's own
// (dataDirIsOurs). It returns the folder dataDir leads to, with no link left: the one
// checked, for bubblewrap to bind.
func makeUserDir(dataDir, name string, runAs *Account) (string, error) {
	mode, uid, gid, who := os.FileMode(0o700), os.Geteuid(), os.Getegid(), "gemgate's account"
	if runAs != nil {
		mode, uid, gid, who = 0o711, int(runAs.Uid), int(runAs.Gid), runAs.Name
	}
	if err := os.MkdirAll(dataDir, mode); err != nil {
		return "", fmt.Errorf("data_dir: %w", err)
	}
	dataDir, err := dataDirIsOurs(dataDir)
	if err != nil {
		return "", err
	}
	dfd, err := unix.Open(dataDir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return "", fmt.Errorf("data_dir: opening %s: %w", dataDir, err)
	}
	defer unix.Close(dfd)
	dir := filepath.Join(dataDir, name)
	made := true
	if err := unix.Mkdirat(dfd, name, 0o700); errors.Is(err, unix.EEXIST) {
		made = false
	} else if err != nil {
		return "", fmt.Errorf("data_dir: making %s: %w", dir, err)
	}
	fd, err := unix.Openat(dfd, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if errors.Is(err, unix.ELOOP) || errors.Is(err, unix.ENOTDIR) {
		return "", fmt.Errorf("data_dir: %s exists and is not a folder (a link or a file); remove it", dir)
	} else if err != nil {
		return "", fmt.Errorf("data_dir: opening %s: %w", dir, err)
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return "", fmt.Errorf("data_dir: %s: %w", dir, err)
	}
	switch {
	case int(st.Uid) == uid:
		return dataDir, nil
	case !made:
		return "", fmt.Errorf("data_dir: %s belongs to uid %d, not to %s (uid %d), which the user's workers run as; remove it, or give it to that account", dir, st.Uid, who, uid)
	}
	if err := unix.Fchown(fd, uid, gid); err != nil {
		_ = unix.Unlinkat(dfd, name, unix.AT_REMOVEDIR)
		return "", fmt.Errorf("data_dir: giving %s to %s: %w", dir, who, err)
	}
	return dataDir, nil
}

// dataDirIsOurs refuses a data_dir that another account could rearrange, and answers where it
// leads: what makeUserDir checks of a user's folder, bubblewrap then binds by its path, so an
// account that may rename entries in dataDir could swap the folder checked for a link in
// between. Every folder on the way to it, through any links, must be closed to other accounts
// (private.Path), and dataDir itself gemgate's account's or root's. It may be writable by all:
// a Kubernetes emptyDir is root's, mode 0777, in a pod where no other account runs.
func dataDirIsOurs(dataDir string) (string, error) {
	real, err := private.Path(dataDir)
	if err != nil {
		return "", fmt.Errorf("data_dir: %w; another account could swap a user's folder for a link: use a data_dir below folders only gemgate's account or root may write", err)
	}
	var st unix.Stat_t
	if err := unix.Stat(real, &st); err != nil {
		return "", fmt.Errorf("data_dir: %w", err)
	}
	if int(st.Uid) != os.Geteuid() && st.Uid != 0 {
		return "", fmt.Errorf("data_dir: %s belongs to uid %d, not to gemgate's account (uid %d) or root: that account could swap a user's folder for a link; "+
			"use a data_dir of gemgate's account's own", real, st.Uid, os.Geteuid())
	}
	return real, nil
}

// ProbeSandbox finds bwrap and checks, once, that it can start a confined process here as
// runAs (nil: as gemgate). It fails without bwrap, and in containers without user namespaces
// or whose seccomp profile forbids mounts.
func ProbeSandbox(ctx context.Context, runAs *Account) (string, error) {
	bwrap, err := exec.LookPath("bwrap")
	if err != nil {
		return "", fmt.Errorf("bubblewrap (bwrap) cannot confine workers here: %w", err)
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	// bwrap itself is the one program certain to be inside: it prints its version.
	cmd := exec.CommandContext(ctx, bwrap, append(baseArgs(), "--", bwrap, "--version")...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Pdeathsig: syscall.SIGKILL}
	if runAs != nil {
		cmd.SysProcAttr.Credential = runAs.credential()
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	// bwrap's init inside the sandbox can outlast bwrap by a moment; a subreaper adopts it.
	ReapOrphans()
	if err == nil && !strings.HasPrefix(string(out), "bubblewrap") {
		err = fmt.Errorf("unexpected output %q", out)
	}
	if said := strings.TrimSpace(stderr.String()); err != nil && said != "" {
		err = fmt.Errorf("%w: %s", err, said)
	}
	if err != nil {
		return "", fmt.Errorf("bubblewrap (%s) cannot confine workers here: %w", bwrap, err)
	}
	return bwrap, nil
}

// Unisolated says exactly what is not isolated when workers run without the sandbox, for the
// one log line at start and for `gemgate check`.
func Unisolated(separateAccounts bool) string {
	s := "workers share gemgate's PID namespace and /proc (each can list every process on the host and their command lines), " +
		"the host filesystem with their uid's rights, and /tmp; "
	if separateAccounts {
		s += "workers of the same worker account can read each other's environment, memory (/proc/<pid>/mem) and open files, and send each other signals; "
	} else {
		s += "every worker runs as gemgate's uid, so workers can read each other's environment, memory (/proc/<pid>/mem: another user's credential and token) and open files " +
			"(a credential handed on a descriptor stays out of the environment, but not out of memory), " +
			"and send signals to each other and to gemgate (stop another user's worker, or gemgate itself); "
	}
	return s + "gemgate itself is non-dumpable (its memory stays unreadable), and descendants that escape a worker's session are killed when a worker ends"
}
