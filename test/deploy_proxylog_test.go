package test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"
)

// gemgate refuses a token in the query string (401, and it never logs it), but the balancer in
// front writes its own log line for that request first. The shipped HAProxy file logs each
// request with the subject it was hashed on; it must not log the query string, where a
// misconfigured client's access_token is.
func TestDeployHAProxyLogsNoQueryToken(t *testing.T) {
	t.Parallel()
	backend := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/readyz" {
			w.Write([]byte("ready"))
			return
		}
		w.WriteHeader(http.StatusUnauthorized)
	}))
	defer backend.Close()
	addr := strings.TrimPrefix(backend.URL, "http://")
	mcpPort, statsPort := scaleFreePort(t), scaleFreePort(t)
	h := startHAProxy(t, scaleConfig(t, mcpPort, statsPort, []string{addr, addr, addr}), statsPort)

	const secret = "eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJxdWVyeS10b2tlbi1zZWNyZXQifQ.c2lnbmF0dXJl"
	base := fmt.Sprintf("http://127.0.0.1:%d", mcpPort)
	for _, u := range []string{base + "/mcp?access_token=" + secret, base + "/mcp?x=1&access_token=" + secret} {
		resp, err := ltMetricsClient.Post(u, "application/json", strings.NewReader(`{}`))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
	}
	logged := regexp.MustCompile(` mcp gemgate/\S+ `)
	deadline := time.Now().Add(10 * time.Second)
	for {
		n := 0
		h.logs.mu.Lock()
		lines := append([]string(nil), h.logs.lines...)
		h.logs.mu.Unlock()
		for _, l := range lines {
			if logged.MatchString(l) {
				n++
			}
		}
		if n >= 2 {
			for _, l := range lines {
				if strings.Contains(l, secret) {
					t.Errorf("HAProxy logged the token of a request's query string:\n%s", l)
				}
			}
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("HAProxy logged %d of the 2 requests within 10s:\n%s", n, strings.Join(lines, "\n"))
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// The nginx example writes its access log without the query string, for the same reason.
func TestDeployNginxLogsNoQuery(t *testing.T) {
	t.Parallel()
	b, err := os.ReadFile("../deploy/proxy/nginx.conf")
	if err != nil {
		t.Fatal(err)
	}
	conf := string(b)
	// nginx's default access log format ("combined") writes $request, the request line with its
	// query string; a log_format of the file's own must be used for every access_log.
	format := regexp.MustCompile(`(?s)\blog_format\s+(\S+)\s+(.*?);`).FindStringSubmatch(conf)
	if format == nil {
		t.Fatal("nginx.conf defines no log_format: nginx logs with \"combined\", whose $request carries the query string (and a token a client put there)")
	}
	for _, v := range []string{"$request ", "$request'", "$request\"", "$request_uri", "$args", "$query_string", "$arg_"} {
		if strings.Contains(format[2], v) {
			t.Errorf("nginx.conf's log_format %s logs %s, which carries the query string", format[1], strings.Trim(v, " '\""))
		}
	}
	uses := regexp.MustCompile(`\baccess_log\s+\S+\s+(\S+?)\s*;`).FindAllStringSubmatch(conf, -1)
	if len(uses) == 0 {
		t.Error("nginx.conf sets no access_log with its log_format")
	}
	for _, u := range uses {
		if u[1] != format[1] {
			t.Errorf("an access_log of nginx.conf logs with %q, not the file's log_format %q", u[1], format[1])
		}
	}
}
