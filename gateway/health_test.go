package gateway

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
)

func getBody(t *testing.T, url string) (int, string) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func TestHealthAndReadiness(t *testing.T) {
	var ready, degraded error
	f := newFixture(t, func(o *Options) {
		o.Ready = func(context.Context) error { return ready }
		o.Degraded = func(context.Context) error { return degraded }
	})
	base := strings.TrimSuffix(f.url, "/mcp")
	check := func(path string, wantStatus int, wantBody string) {
		t.Helper()
		status, body := getBody(t, base+path)
		if status != wantStatus || !strings.Contains(body, wantBody) {
			t.Errorf("%s = %d %q, want %d containing %q", path, status, body, wantStatus, wantBody)
		}
	}
	check("/healthz", 200, "ok")
	check("/readyz", 200, "ready\n")

	degraded = errors.New("issuer unreachable, cached signing keys in use")
	check("/readyz", 200, "ready (degraded: issuer unreachable, cached signing keys in use)")

	ready = errors.New("no signing keys loaded from https://secret.internal/jwks")
	status, body := getBody(t, base+"/readyz")
	if status != http.StatusServiceUnavailable || strings.Contains(body, "secret.internal") {
		t.Errorf("/readyz without keys = %d %q: want 503 revealing no configuration", status, body)
	}

	ready, degraded = nil, nil
	f.gw.BeginShutdown()
	check("/readyz", 503, "shutting down")
	check("/healthz", 200, "ok")
}
