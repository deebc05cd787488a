package auth

import (
	"encoding/json"
	"net/http"
	"net/url"
	"strconv"
	"strings"
)

// Metadata is the RFC 9728 protected-resource metadata of the MCP endpoint.
type Metadata struct {
	Resource             string   // the exact public MCP URL
	AuthorizationServers []string // [issuer]
	ScopesSupported      []string
	ResourceName         string // optional
}

// metadataDocument is the JSON form; bearer tokens go in the header only.
type metadataDocument struct {
	Resource               string   `json:"resource"`
	AuthorizationServers   []string `json:"authorization_servers"`
	ScopesSupported        []string `json:"scopes_supported,omitempty"`
	BearerMethodsSupported []string `json:"bearer_methods_supported"`
	ResourceName           string   `json:"resource_name,omitempty"`
}

// MetadataHandler serves m as RFC 9728 JSON for GET and HEAD to any origin, answers CORS
// preflights (browser clients send MCP-Protocol-Version, which needs one), else 405.
func MetadataHandler(m Metadata) http.Handler {
	doc := metadataDocument{
		Resource:               m.Resource,
		AuthorizationServers:   append([]string{}, m.AuthorizationServers...),
		ScopesSupported:        append([]string(nil), m.ScopesSupported...),
		BearerMethodsSupported: []string{"header"},
		ResourceName:           m.ResourceName,
	}
	body, err := json.Marshal(doc)
	if err != nil {
		panic("auth: metadata cannot be encoded: " + err.Error()) // strings and slices always encode
	}
	body = append(body, '\n')
	const allow = "GET, HEAD, OPTIONS"
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("Access-Control-Allow-Origin", "*")
		switch r.Method {
		case http.MethodGet, http.MethodHead:
		case http.MethodOptions:
			h.Set("Access-Control-Allow-Methods", allow)
			h.Set("Access-Control-Allow-Headers", "*")
			h.Set("Access-Control-Max-Age", "86400")
			w.WriteHeader(http.StatusNoContent)
			return
		default:
			h.Set("Allow", allow)
			writeJSONError(w, http.StatusMethodNotAllowed, "method_not_allowed", "use GET")
			return
		}
		h.Set("Content-Type", "application/json")
		h.Set("Content-Length", strconv.Itoa(len(body)))
		h.Set("Cache-Control", "public, max-age=300")
		w.WriteHeader(http.StatusOK)
		if r.Method == http.MethodGet {
			_, _ = w.Write(body)
		}
	})
}

// MetadataURL returns the RFC 9728 well-known URL for a resource, "" if it is not absolute:
// https://h/mcp -> https://h/.well-known/oauth-protected-resource/mcp.
func MetadataURL(resource string) string {
	u, err := url.Parse(resource)
	if err != nil || u.Scheme == "" || u.Host == "" {
		return ""
	}
	path := strings.TrimSuffix(u.EscapedPath(), "/")
	s := u.Scheme + "://" + u.Host + "/.well-known/oauth-protected-resource" + path
	if u.RawQuery != "" {
		s += "?" + u.RawQuery
	}
	return s
}
