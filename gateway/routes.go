package gateway

import (
	"net/http"

	"github.com/go-chi/chi/v5"

	"github.com/gemgate/gemgate/gateway/sessionless"
)

// routes is the gateway's handler below requestDeadline.
//
// chi routes every path. The MCP endpoint's own path, spelled exactly (the common case:
// every call and every GET stream), is also served by a direct entry that runs the very
// same handlers (requestInfo, recoverer, then mcpEndpoint) without chi's two routers in
// between. Two reasons, both measured (docs/PERFORMANCE.md): an idle GET stream waits on
// its connection's goroutine for as long as it is open, and the frames beneath the wait
// decide whether the runtime can halve that goroutine's stack (it halves a stack only when
// less than a quarter is in use): chi's frames kept it from doing so, 8 KiB per idle
// session. And a call skips chi's route context. The direct entry takes a request only
// when chi would route it to the same handler (the path chi reads is r.URL.Path exactly
// when r.URL.RawPath is empty) and the method is one of the endpoint's three (chi answers
// any other before the endpoint's middleware), which TestDirectEntryRoutesAsChi checks
// against chi alone.
func (g *Gateway) routes() http.Handler {
	mcp := g.mcpEndpoint()
	return &entry{path: g.opts.MCPPath, direct: g.requestInfo(g.recoverer(mcp)), viaChi: g.chiRoutes(mcp)}
}

// entry picks the direct entry or chi (routes). Its ServeHTTP makes one dynamic call, so
// that neither router is inlined into its frame, which every idle GET stream keeps.
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

// chiRoutes routes every path the gateway serves; mcp is the MCP endpoint (mcpEndpoint).
func (g *Gateway) chiRoutes(mcp http.Handler) http.Handler {
	r := chi.NewRouter()
	r.Use(g.requestInfo, g.recoverer)
	r.Get("/healthz", g.healthz)
	r.Get("/readyz", g.readyz)
	if g.opts.Metadata != nil {
		r.Handle("/.well-known/oauth-protected-resource", g.opts.Metadata)
		r.Handle("/.well-known/oauth-protected-resource"+g.opts.MCPPath, g.opts.Metadata)
	}
	// MCPPath and MCPPath/ are the endpoint; nothing beneath it is.
	r.Handle(g.opts.MCPPath, mcp)
	r.Handle(g.opts.MCPPath+"/", mcp)
	return r
}

// mcpEndpoint is the MCP endpoint: CORS, a POST's span (traced, verified), the refusal trace,
// the bearer token and the Origin gate in front of every method, then the method's handler.
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
	return g.cors(g.traced(g.traceRefused(g.opts.Authenticate(g.verified(g.originGate(methods))))))
}

// servedDirect: the methods the direct entry takes.
func servedDirect(method string) bool {
	return method == http.MethodPost || method == http.MethodGet || method == http.MethodDelete
}
