package main

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
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
