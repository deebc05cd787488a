package helm

import (
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"
)

// The liveness probe restarts the container when it fails: every session and worker of the
// pod ends. docs/operations.md has /healthz answer 200 "while the process serves"; a replica at
// its connection cap (max_connections, every connection a client's GET stream or call) serves
// every connection it holds, yet answers a new one, a probe's among them, with the cap's
// minimal 503. The chart's liveness probe must pass there: load is the readiness probe's
// business (and the balancer's), not a reason to kill the pod. The probe is run as the kubelet
// runs it, against gemgate whose listener holds max_connections connections.
func TestChartLivenessProbePassesAtTheConnectionCap(t *testing.T) {
	c := deployment(t, renderByKind(t, filepath.Join(chart, "ci", "minimal-values.yaml"))).Spec.Template.Spec.Containers[0]
	probe := c.LivenessProbe
	if probe == nil {
		t.Fatal("the chart's container has no liveness probe")
	}

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	dir := t.TempDir()
	const cap = 2
	g := exec.Command(gemgateBinary(t), "dev", "--listen", addr, "--metrics-listen", "off", "--data-dir", dir,
		"--max-connections", fmt.Sprint(cap), "--log-format", "text")
	g.Env = append(os.Environ(), "HOME="+dir)
	if err := g.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { g.Process.Kill(); g.Wait() })
	once := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}, Timeout: 5 * time.Second}
	deadline := time.Now().Add(30 * time.Second)
	for {
		resp, err := once.Get("http://" + addr + "/healthz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				break
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("gemgate dev did not answer /healthz within 30s: %v", err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	// Clients hold every connection the cap allows (idle keep-alive connections here; open GET
	// streams in a busy replica).
	// Each is held, not answered with the cap's 503 (which would come at once).
	time.Sleep(200 * time.Millisecond)
	for range cap {
		conn, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		conn.SetReadDeadline(time.Now().Add(300 * time.Millisecond))
		if n, _ := conn.Read(make([]byte, 1)); n > 0 {
			t.Fatal("a connection within the cap was answered before it sent a request")
		}
	}

	// The probe, as the kubelet runs it: a fresh connection each time.
	port := func(name string) string {
		for _, p := range c.Ports {
			if p.Name == name {
				return fmt.Sprint(p.ContainerPort)
			}
		}
		return name
	}
	_, listenPort, _ := net.SplitHostPort(addr)
	switch {
	case probe.HTTPGet != nil:
		if port(probe.HTTPGet.Port.String()) != "8080" {
			t.Fatalf("the probe asks port %s", probe.HTTPGet.Port.String())
		}
		client := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}, Timeout: time.Duration(probe.TimeoutSeconds) * time.Second}
		resp, err := client.Get("http://127.0.0.1:" + listenPort + probe.HTTPGet.Path)
		if err != nil {
			t.Fatalf("liveness probe GET %s at the connection cap: %v", probe.HTTPGet.Path, err)
		}
		resp.Body.Close()
		// The kubelet counts 200-399 as success.
		if resp.StatusCode < 200 || resp.StatusCode >= 400 {
			t.Errorf("liveness probe GET %s at the connection cap: %s; after %d such failures %ds apart the kubelet restarts the pod, ending every session and worker on it",
				probe.HTTPGet.Path, resp.Status, probe.FailureThreshold, probe.PeriodSeconds)
		}
	case probe.TCPSocket != nil:
		if port(probe.TCPSocket.Port.String()) != "8080" {
			t.Fatalf("the probe asks port %s", probe.TCPSocket.Port.String())
		}
		conn, err := net.DialTimeout("tcp", "127.0.0.1:"+listenPort, time.Duration(probe.TimeoutSeconds)*time.Second)
		if err != nil {
			t.Errorf("liveness probe (TCP) at the connection cap: %v", err)
		} else {
			conn.Close()
		}
	default:
		t.Fatalf("the liveness probe is neither httpGet nor tcpSocket: %+v", probe)
	}
}
