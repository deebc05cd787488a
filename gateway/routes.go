package gateway

import (
	"net/http"

	"github.com/go-chi/chi/v5"
)

// routes is the gateway's handler below requestDeadline: chi routes every path.
func (g *Gateway) routes() http.Handler {
	r := chi.NewRouter()
	r.Use(g.requestInfo, g.recoverer)
	r.Get("/healthz", g.healthz)
	r.Get("/readyz", g.readyz)
	if g.opts.Metadata != nil {
		r.Handle("/.well-known/oauth-protected-resource", g.opts.Metadata)
		r.Handle("/.well-known/oauth-protected-resource"+g.opts.MCPPath, g.opts.Metadata)
	}
	// MCPPath and MCPPath/ are the endpoint; nothing beneath it is.
	mcp := g.mcpEndpoint()
	r.Handle(g.opts.MCPPath, mcp)
	r.Handle(g.opts.MCPPath+"/", mcp)
	return r
}

// mcpEndpoint is the MCP endpoint: CORS, the refusal trace, the bearer token and the Origin
// gate in front of every method, then the method's handler.
func (g *Gateway) mcpEndpoint() http.Handler {
	get, del := g.legacyOnly(g.handleGet), g.legacyOnly(g.handleDelete)
	methods := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.Method {
		case http.MethodPost:
			g.handlePost(w, r)
		case http.MethodGet:
			get(w, r)
		case http.MethodDelete:
			del(w, r)
		default:
			w.Header().Set("Allow", "GET, POST, DELETE")
			http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		}
	})
	return g.cors(g.traceRefused(g.opts.Authenticate(g.originGate(methods))))
}
