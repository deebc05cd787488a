package auth

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/oauthex"
)

func TestMetadataHandler(t *testing.T) {
	m := Metadata{
		Resource:             "https://mcp.example.com/mcp",
		AuthorizationServers: []string{"https://auth.example.com/realms/demo"},
		ScopesSupported:      []string{"mcp:use", "mcp:write"},
		ResourceName:         "gemgate",
	}
	h := MetadataHandler(m)

	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/.well-known/oauth-protected-resource/mcp", nil))
	if rec.Code != http.StatusOK {
		t.Fatalf("GET status %d", rec.Code)
	}
	for name, want := range map[string]string{"Content-Type": "application/json", "Access-Control-Allow-Origin": "*"} {
		if got := rec.Header().Get(name); got != want {
			t.Errorf("%s = %q, want %q", name, got, want)
		}
	}
	var got map[string]any
	if err := json.Unmarshal(rec.Body.Bytes(), &got); err != nil {
		t.Fatal(err)
	}
	want := map[string]any{
		"resource":                 "https://mcp.example.com/mcp",
		"authorization_servers":    []any{"https://auth.example.com/realms/demo"},
		"scopes_supported":         []any{"mcp:use", "mcp:write"},
		"bearer_methods_supported": []any{"header"},
		"resource_name":            "gemgate",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("document (-want +got):\n%s", diff)
	}

	// resource_name and scopes_supported are optional; the rest is not.
	rec = httptest.NewRecorder()
	MetadataHandler(Metadata{Resource: "https://h/mcp", AuthorizationServers: []string{"https://as"}}).
		ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/", nil))
	got = nil
	_ = json.Unmarshal(rec.Body.Bytes(), &got)
	if diff := cmp.Diff(map[string]any{
		"resource": "https://h/mcp", "authorization_servers": []any{"https://as"}, "bearer_methods_supported": []any{"header"},
	}, got); diff != "" {
		t.Errorf("minimal document (-want +got):\n%s", diff)
	}

	tests := []struct {
		method string
		status int
		body   bool
	}{
		{http.MethodHead, http.StatusOK, false},
		{http.MethodOptions, http.StatusNoContent, false},
		{http.MethodPost, http.StatusMethodNotAllowed, true},
		{http.MethodPut, http.StatusMethodNotAllowed, true},
		{http.MethodDelete, http.StatusMethodNotAllowed, true},
	}
	for _, tt := range tests {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(tt.method, "/", nil))
		if rec.Code != tt.status {
			t.Errorf("%s: status %d, want %d", tt.method, rec.Code, tt.status)
		}
		if (rec.Body.Len() > 0) != tt.body {
			t.Errorf("%s: body %q", tt.method, rec.Body)
		}
		if rec.Header().Get("Access-Control-Allow-Origin") != "*" {
			t.Errorf("%s: no CORS header", tt.method)
		}
	}
}

// TestMetadataWithGoSDKClient fetches the document the way the Go SDK's
// client does, which insists on resource == the MCP URL and a JSON content type.
func TestMetadataWithGoSDKClient(t *testing.T) {
	mux := http.NewServeMux()
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	resource := srv.URL + "/mcp"
	mux.Handle("/.well-known/oauth-protected-resource/mcp", MetadataHandler(Metadata{
		Resource:             resource,
		AuthorizationServers: []string{"http://127.0.0.1:1/realms/demo"},
		ScopesSupported:      []string{"mcp:use"},
	}))
	prm, err := oauthex.GetProtectedResourceMetadata(context.Background(), MetadataURL(resource), resource, srv.Client())
	if err != nil {
		t.Fatal(err)
	}
	if prm.Resource != resource || len(prm.AuthorizationServers) != 1 || prm.BearerMethodsSupported[0] != "header" {
		t.Errorf("metadata = %+v", prm)
	}
}

func TestMetadataURL(t *testing.T) {
	tests := map[string]string{
		"https://mcp.example.com/mcp":         "https://mcp.example.com/.well-known/oauth-protected-resource/mcp",
		"https://mcp.example.com/public/mcp":  "https://mcp.example.com/.well-known/oauth-protected-resource/public/mcp",
		"https://mcp.example.com:8443/mcp/":   "https://mcp.example.com:8443/.well-known/oauth-protected-resource/mcp",
		"https://mcp.example.com":             "https://mcp.example.com/.well-known/oauth-protected-resource",
		"https://mcp.example.com/":            "https://mcp.example.com/.well-known/oauth-protected-resource",
		"http://127.0.0.1:8080/mcp":           "http://127.0.0.1:8080/.well-known/oauth-protected-resource/mcp",
		"https://h/a%20b":                     "https://h/.well-known/oauth-protected-resource/a%20b",
		"https://h/mcp?tenant=1":              "https://h/.well-known/oauth-protected-resource/mcp?tenant=1",
		"/mcp":                                "",
		"not a url at all":                    "",
		"https://mcp.example.com/mcp#section": "https://mcp.example.com/.well-known/oauth-protected-resource/mcp",
	}
	for in, want := range tests {
		if got := MetadataURL(in); got != want {
			t.Errorf("MetadataURL(%q) = %q, want %q", in, got, want)
		}
	}
}
