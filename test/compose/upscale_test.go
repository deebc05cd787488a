package compose

import (
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"
)

// replicas of the scale example and their published metrics ports.
var replicas = []struct{ name, metrics string }{
	{"gemgate1", "http://127.0.0.1:9465/metrics"},
	{"gemgate2", "http://127.0.0.1:9466/metrics"},
	{"gemgate3", "http://127.0.0.1:9467/metrics"},
}

// sessionsOpen reads gemgate_sessions_open (all series summed) of each running replica; a
// stopped one is left out.
func (d *docker) sessionsOpen(t *testing.T, stopped string) map[string]float64 {
	t.Helper()
	open := map[string]float64{}
	for _, r := range replicas {
		if r.name == stopped {
			continue
		}
		resp, err := d.client.Get(r.metrics)
		if err != nil {
			t.Fatalf("%s metrics: %v", r.name, err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		found := false
		for _, line := range strings.Split(string(body), "\n") {
			if strings.HasPrefix(line, "gemgate_sessions_open ") || strings.HasPrefix(line, "gemgate_sessions_open{") {
				f := strings.Fields(line)
				v, err := strconv.ParseFloat(f[len(f)-1], 64)
				if err != nil {
					t.Fatalf("%s: %q: %v", r.name, line, err)
				}
				open[r.name] += v
				found = true
			}
		}
		if !found {
			t.Fatalf("%s serves no gemgate_sessions_open:\n%.2000s", r.name, body)
		}
	}
	return open
}

// holder names the one replica whose open sessions grew by one since before.
func holder(t *testing.T, before, after map[string]float64) string {
	t.Helper()
	var grew []string
	for name, n := range after {
		if n == before[name]+1 {
			grew = append(grew, name)
		} else if n != before[name] {
			t.Fatalf("open sessions went from %v to %v", before, after)
		}
	}
	if len(grew) != 1 {
		t.Fatalf("one new session, but open sessions went from %v to %v", before, after)
	}
	return grew[0]
}

// The scale example up: three replicas behind HAProxy (the shipped haproxy.cfg), a user's
// requests kept on one replica, and when that replica stops, the user served by another.
func TestComposeUpScale(t *testing.T) {
	d := startDocker(t)
	p := d.project("docker-compose.scale.yml", "scale.yml")
	p.up(t, "gemgate-scale")
	// All three in HAProxy's ring (each ready, its checks passed), or a user could be hashed
	// to one replica now and another later. HAProxy's own metrics, on its loopback.
	eventually(t, 3*time.Minute, func() string {
		out, err := d.run(t, time.Minute, append(append([]string{"compose"}, p.files...), "exec", "-T", "haproxy", "bash", "-c",
			`exec 3<>/dev/tcp/127.0.0.1/8404 && printf 'GET /metrics HTTP/1.0\r\n\r\n' >&3 && grep '^haproxy_backend_active_servers{proxy="gemgate"}' <&3`)...)
		if err != nil || !strings.Contains(out, `haproxy_backend_active_servers{proxy="gemgate"} 3`) {
			return fmt.Sprintf("HAProxy has not all three replicas up: %v %s", err, out)
		}
		return ""
	})

	aliceToken := d.login(t, "alice", "openid mcp:use mcp:write")
	bobToken := d.login(t, "bob", "openid mcp:use")

	// alice's sessions, however many she opens, all land on one replica (HAProxy hashes her
	// token's user claim, the replicas' preferred_username), and every call of a session reaches it (any other answers 404).
	before := d.sessionsOpen(t, "")
	first := d.open(t, aliceToken)
	home := holder(t, before, d.sessionsOpen(t, ""))
	for i := 0; i < 3; i++ {
		before = d.sessionsOpen(t, "")
		s := d.open(t, aliceToken)
		if got := holder(t, before, d.sessionsOpen(t, "")); got != home {
			t.Fatalf("alice's session %d opened on %s, her first on %s", i+2, got, home)
		}
		for j := 0; j < 3; j++ {
			if code, out := s.call(t, "whoami", nil); code != http.StatusOK || !strings.Contains(out, "user=alice") {
				t.Fatalf("whoami as alice: %d %s", code, out)
			}
		}
	}
	bob := d.open(t, bobToken)
	if code, out := bob.call(t, "whoami", nil); code != http.StatusOK || !strings.Contains(out, "read_only=true") {
		t.Fatalf("whoami as bob: %d %s", code, out)
	}
	t.Logf("alice's replica: %s", home)

	// Her replica stops (SIGTERM: it drains, HAProxy's check takes it out of the ring).
	p.compose(t, 2*time.Minute, "stop", home)
	// The session she had lived there; a call on it is not answered by another replica.
	if code, _ := first.call(t, "whoami", nil); code == http.StatusOK {
		t.Fatalf("a session of the stopped replica %s still answered 200", home)
	}
	// She opens a new one, as a client does after a 404, and another replica serves her.
	before = d.sessionsOpen(t, home)
	again := d.open(t, aliceToken)
	moved := holder(t, before, d.sessionsOpen(t, home))
	if moved == home {
		t.Fatal("served by the stopped replica")
	}
	if code, out := again.call(t, "whoami", nil); code != http.StatusOK || !strings.Contains(out, "user=alice") {
		t.Fatalf("whoami as alice after %s stopped: %d %s", home, code, out)
	}
	t.Logf("after %s stopped, alice is served by %s", home, moved)
}
