package main

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

func TestHealthCheck(t *testing.T) {
	ok := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.Write([]byte("ok")) }))
	defer ok.Close()
	down := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(503) }))
	defer down.Close()
	var out bytes.Buffer
	if code := checkCommand(context.Background(), []string{"--health", ok.URL}, &out, &out); code != 0 {
		t.Errorf("healthy: exit %d: %s", code, out.String())
	}
	if code := checkCommand(context.Background(), []string{"--health", down.URL}, &out, &out); code != 1 {
		t.Errorf("503: exit %d", code)
	}
	if code := checkCommand(context.Background(), []string{"--health", "http://127.0.0.1:1/healthz"}, &out, &out); code != 1 {
		t.Errorf("unreachable: exit %d", code)
	}
}

// --health=URL is the same as --health URL, and a URL without its scheme is told what to
// write, not net/url's parse error.
func TestHealthCheckSpellings(t *testing.T) {
	ok := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.Write([]byte("ok")) }))
	defer ok.Close()
	for _, arg := range []string{"--health=" + ok.URL, "-health=" + ok.URL} {
		var out bytes.Buffer
		if code := checkCommand(context.Background(), []string{arg}, &out, &out); code != 0 {
			t.Errorf("%s: exit %d: %s", arg, code, out.String())
		}
	}
	var out bytes.Buffer
	bare := strings.TrimPrefix(ok.URL, "http://") + "/healthz"
	if code := checkCommand(context.Background(), []string{"--health", bare}, &out, &out); code != 2 ||
		!strings.Contains(out.String(), "is not an http or https URL with a host, e.g. http://127.0.0.1:8080/healthz") {
		t.Errorf("%s: exit %d: %s", bare, code, out.String())
	}
	// A password in the URL is never printed, whichever way the check ends.
	for _, u := range []string{"ftp://user:s3cretpw@127.0.0.1/healthz", "http://user:s3cretpw@" + strings.TrimPrefix(ok.URL, "http://"),
		"http://user:s3cretpw@127.0.0.1:1/healthz", "http://user:s3cretpw@[::1/healthz"} {
		out.Reset()
		checkCommand(context.Background(), []string{"--health", u}, &out, &out)
		if strings.Contains(out.String(), "s3cretpw") {
			t.Errorf("check --health %s printed its password: %s", u, out.String())
		}
	}
}
