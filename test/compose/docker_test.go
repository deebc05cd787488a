package compose

// A Docker daemon of the test's own, in a network namespace of its own, and Compose v2 driving
// it: what TestComposeUp... run the shipped compose files with. The images come from
// .ci/images.sh (no image registry is reachable in CI), which leaves them in a data root that
// this daemon opens (GEMGATE_DOCKER_DATA). Containers, their bridge networks and their published
// ports exist only in that namespace; the test reaches the published ports from inside it (a
// dialer that enters the namespace), as a user on the host reaches them on theirs.

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// docker is a running daemon of the test's own.
type docker struct {
	cli    string   // Debian's docker client
	env    []string // DOCKER_HOST and DOCKER_CONFIG (the compose plugin) for every command
	netns  string   // /proc/PID/ns/net of dockerd
	client *http.Client
}

// requireDocker fails (in CI, or with GEMGATE_TEST_REQUIRE_DOCKER=1) or skips when what the test
// needs is missing: root, dockerd, Debian's docker client, the compose plugin and the images.
func requireDocker(t *testing.T) (data, cli, config string) {
	t.Helper()
	data, cli, config = os.Getenv("GEMGATE_DOCKER_DATA"), os.Getenv("GEMGATE_DOCKER_CLI"), os.Getenv("DOCKER_CONFIG")
	var missing []string
	if os.Geteuid() != 0 {
		missing = append(missing, "root (dockerd and a network namespace)")
	}
	if _, err := exec.LookPath("dockerd"); err != nil {
		missing = append(missing, "dockerd (apt-get install docker.io)")
	}
	if data == "" || cli == "" || config == "" {
		missing = append(missing, `GEMGATE_DOCKER_DATA, GEMGATE_DOCKER_CLI, DOCKER_CONFIG (.ci/images.sh build; eval "$(.ci/images.sh env)")`)
	} else if _, err := os.Stat(filepath.Join(config, "cli-plugins", "docker-compose")); err != nil {
		missing = append(missing, "the compose plugin ("+err.Error()+")")
	}
	if len(missing) == 0 {
		return data, cli, config
	}
	msg := "the compose demo cannot run: missing " + strings.Join(missing, "; ")
	if os.Getenv("CI") != "" || os.Getenv("GEMGATE_TEST_REQUIRE_DOCKER") != "" {
		t.Fatal(msg)
	}
	t.Skip(msg)
	return
}

// startDocker starts dockerd in a new network namespace on the images' data root; cleanup stops
// it and deletes the namespace.
func startDocker(t *testing.T) *docker {
	data, cli, config := requireDocker(t)
	run, err := os.MkdirTemp("", "gemgate-docker-") // short: unix socket paths are limited
	if err != nil {
		t.Fatal(err)
	}
	d := &docker{cli: cli, env: append(os.Environ(), "DOCKER_HOST=unix://"+run+"/docker.sock", "DOCKER_CONFIG="+config)}
	// unshare --net: a network namespace of dockerd's own, gone when dockerd ends (nothing
	// named is left behind). Not `ip netns exec`, which mounts a /sys without the cgroup file
	// systems dockerd needs.
	cmd := exec.Command("unshare", "--net", "sh", "-c", `ip link set lo up && exec dockerd "$@"`, "dockerd",
		"--data-root", data, "--exec-root", run+"/exec", "--pidfile", run+"/dockerd.pid", "-H", "unix://"+run+"/docker.sock")
	logf, err := os.Create(filepath.Join(run, "dockerd.log"))
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		t.Fatalf("dockerd: %v", err)
	}
	d.netns = fmt.Sprintf("/proc/%d/ns/net", cmd.Process.Pid) // unshare and sh exec: dockerd's pid
	exited := make(chan struct{})
	go func() { cmd.Wait(); close(exited) }()
	t.Cleanup(func() {
		cmd.Process.Signal(unix.SIGTERM)
		select {
		case <-exited:
		case <-time.After(60 * time.Second):
			t.Errorf("dockerd ignored SIGTERM for 60s; killed")
			cmd.Process.Kill()
			<-exited
		}
		logf.Close()
		os.RemoveAll(run)
	})
	deadline := time.Now().Add(60 * time.Second)
	for exec.Command(cli, "-H", "unix://"+run+"/docker.sock", "version").Run() != nil {
		select {
		case <-exited:
			log, _ := os.ReadFile(logf.Name())
			t.Fatalf("dockerd exited:\n%s", tail(string(log), 3000))
		case <-time.After(250 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatal("dockerd did not answer within 60s")
		}
	}
	d.client = &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{DialContext: d.dial, DisableKeepAlives: true}}
	return d
}

// dial connects from inside the daemon's network namespace: the thread that makes the socket
// enters the namespace and is never used again (it is locked and its goroutine ends).
func (d *docker) dial(ctx context.Context, network, addr string) (net.Conn, error) {
	type result struct {
		c   net.Conn
		err error
	}
	ch := make(chan result, 1)
	go func() {
		runtime.LockOSThread() // never unlocked: the thread exits with the goroutine
		f, err := os.Open(d.netns)
		if err != nil {
			ch <- result{nil, err}
			return
		}
		defer f.Close()
		if err := unix.Setns(int(f.Fd()), unix.CLONE_NEWNET); err != nil {
			ch <- result{nil, fmt.Errorf("setns: %w", err)}
			return
		}
		c, err := (&net.Dialer{}).DialContext(ctx, network, addr)
		ch <- result{c, err}
	}()
	r := <-ch
	return r.c, r.err
}

// run runs the docker client with args, its output passed through to the test log line by
// line, and returns that output.
func (d *docker) run(t *testing.T, timeout time.Duration, args ...string) (string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, d.cli, args...)
	cmd.Env = d.env
	cmd.Dir = "../../deploy"
	pr, pw := io.Pipe()
	cmd.Stdout, cmd.Stderr = pw, pw
	var out strings.Builder
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		sc := bufio.NewScanner(pr)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			t.Logf("docker %s| %s", args[0], sc.Text())
			out.WriteString(sc.Text() + "\n")
		}
		io.Copy(io.Discard, pr)
	}()
	err := cmd.Run()
	pw.Close()
	wg.Wait()
	return out.String(), err
}

// project is one compose project: the shipped file and the CI override that names local images.
type project struct {
	d     *docker
	files []string
}

func (d *docker) project(file, override string) *project {
	return &project{d: d, files: []string{"-f", file, "-f", "../.ci/compose/" + override}}
}

func (p *project) compose(t *testing.T, timeout time.Duration, args ...string) string {
	t.Helper()
	out, err := p.d.run(t, timeout, append(append([]string{"compose"}, p.files...), args...)...)
	if err != nil {
		t.Fatalf("docker compose %s: %v", strings.Join(args, " "), err)
	}
	return out
}

// up brings the project up and waits for every health check; cleanup takes it down with its
// volumes and checks that nothing of it is left.
func (p *project) up(t *testing.T, name string) {
	t.Helper()
	t.Cleanup(func() {
		if t.Failed() {
			p.d.run(t, time.Minute, append(append([]string{"compose"}, p.files...), "logs", "--no-color", "--tail=60")...)
		}
		p.compose(t, 3*time.Minute, "down", "-v", "--remove-orphans")
		for _, what := range [][]string{{"ps", "-a"}, {"volume", "ls"}, {"network", "ls"}} {
			out, err := p.d.run(t, time.Minute, append(what, "-q", "--filter", "label=com.docker.compose.project="+name)...)
			if err != nil || strings.TrimSpace(out) != "" {
				t.Errorf("after down -v, docker %s still lists %q (%v)", what[0], out, err)
			}
		}
	})
	p.compose(t, 8*time.Minute, "up", "--no-build", "--wait", "--wait-timeout", "420")
}

func tail(s string, n int) string {
	if len(s) > n {
		return s[len(s)-n:]
	}
	return s
}
