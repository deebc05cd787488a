package gateway

import (
	"net/http"

	"github.com/go-chi/chi/v5"

	"github.com/gemgate/gemgate/gateway/sessionless"
)

// routes is the gateway's handler below requestDeadline. The MCP path spelled exactly skips chi
// (docs/PERFORMANCE.md: chi's frames under an idle GET stream cost 8 KiB per session), for
// what chi would route there alone (TestDirectEntryRoutesAsChi).
func (g *Gateway) routes() http.Handler {
	mcp := g.mcpEndpoint()
	return &entry{path: g.opts.MCPPath, direct: g.requestInfo(g.recoverer(mcp)), viaChi: g.chiRoutes(mcp)}
}

// entry makes one dynamic call: neither router is inlined into every idle stream's frame.
type entry struct {
	path           string
	direct, viaChi http.Handler
}

func (e *entry) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h := e.viaChi
	if r.URL.RawPath == "" && r.URL.Path == e.path && servedDirect(r.Method) {
		h = e.direct
	}
	h.ServeHTTP(w, r)
}

func (g *Gateway) chiRoutes(mcp http.Handler) http.Handler {
	r := chi.NewRouter()
	r.Use(g.requestInfo, g.recoverer)
	r.Get("/healthz", g.healthz)
	r.Get("/readyz", g.readyz)
	if g.opts.Metadata != nil {
		r.Handle("/.well-known/oauth-protected-resource", g.opts.Metadata)
		r.Handle("/.well-known/oauth-protected-resource"+g.opts.MCPPath, g.opts.Metadata)
	}
	r.Handle(g.opts.MCPPath, mcp)
	r.Handle(g.opts.MCPPath+"/", mcp)
	return r
}

func (g *Gateway) mcpEndpoint() http.Handler {
	get, del := sessionless.LegacyOnly(g.handleGet), sessionless.LegacyOnly(g.handleDelete)
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
	return g.cors(g.traced(g.traceRefused(g.originGate(g.opts.Authenticate(g.verified(g.headerGate(methods)))))))
}

func servedDirect(method string) bool {
	return method == http.MethodPost || method == http.MethodGet || method == http.MethodDelete
}
