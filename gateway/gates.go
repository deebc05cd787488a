package gateway

import (
	"context"
	"mime"
	"net/http"
	"net/netip"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/gemgate/gemgate/gateway/sessionless"
	"github.com/gemgate/gemgate/gateway/wire"
	"github.com/gemgate/gemgate/jsonrpc"
)

// originGate refuses origins nobody allowed (DNS rebinding) before the token is looked at: the
// MCP transport answers a present, invalid Origin with 403, whatever else the request carries.
// Each Origin given is checked, not the first only (two are refused after it: headerGate).
func (g *Gateway) originGate(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		for _, origin := range r.Header.Values("Origin") {
			if origin != "" && !g.originAllowed(origin, r.Host) {
				(&wire.Error{Status: http.StatusForbidden, Code: jsonrpc.CodeInvalidRequest, Message: "origin not allowed"}).Write(w)
				return
			}
		}
		next.ServeHTTP(w, r)
	})
}

// headerGate refuses repeated headers, once the request is authenticated.
func (g *Gateway) headerGate(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if he := repeatedHeader(r.Header); he != nil {
			he.Write(w)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// repeatedHeader refuses a request that repeats a header gemgate reads (Mcp-*, Last-Event-ID,
// Origin, Content-Type, Content-Encoding): gemgate reads the first value, a proxy or WAF in
// front may read the last or all joined (RFC 9110 §5.3) and filter on what gemgate never saw.
func repeatedHeader(h http.Header) *wire.Error {
	for name, values := range h {
		if len(values) < 2 {
			continue
		}
		code := int64(jsonrpc.CodeInvalidRequest)
		switch {
		case name == sessionless.HeaderMethod || name == sessionless.HeaderName || strings.HasPrefix(name, sessionless.ParamHeaderPrefix):
			code = sessionless.CodeHeaderMismatch // a mirror of the body, which one value alone can match
		case strings.HasPrefix(name, "Mcp-") || name == "Last-Event-Id" || name == "Origin" || name == "Content-Type" || name == "Content-Encoding":
		default:
			continue
		}
		return &wire.Error{Status: http.StatusBadRequest, Code: code, Message: "the " + name + " header is given more than once"}
	}
	return nil
}

// originAllowed: AllowedOrigins; with AllowLoopbackOrigins, the gateway's own (PublicURL's
// scheme and port, with its host or a loopback name) or a loopback Host (a local proxy).
// Another loopback port is another program's page; a non-loopback Host is DNS rebinding.
func (g *Gateway) originAllowed(origin, host string) bool {
	if slices.Contains(g.opts.AllowedOrigins, origin) || slices.Contains(g.opts.AllowedOrigins, "*") {
		return true
	}
	if !g.opts.AllowLoopbackOrigins {
		return false
	}
	u, err := url.Parse(origin)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Path != "" || u.User != nil {
		return false
	}
	if strings.EqualFold(u.Host, host) && loopbackName(u.Hostname()) {
		return true
	}
	own, err := url.Parse(g.opts.PublicURL)
	if err != nil || !strings.EqualFold(u.Scheme, own.Scheme) || originPort(u) != originPort(own) {
		return false
	}
	name := u.Hostname()
	return strings.EqualFold(name, own.Hostname()) || loopbackName(name)
}

func originPort(u *url.URL) string {
	if p := u.Port(); p != "" {
		return p
	}
	if strings.EqualFold(u.Scheme, "https") {
		return "443"
	}
	return "80"
}

func loopbackName(host string) bool {
	return strings.EqualFold(host, "localhost") || host == "127.0.0.1" || host == "::1"
}

// clientIP is the client's address for logs only, past trusted proxies.
func (g *Gateway) clientIP(r *http.Request) netip.Addr {
	ip := peerAddr(r.RemoteAddr)
	if ip.IsValid() && g.trusted(ip) {
		hops := strings.Split(strings.Join(r.Header.Values("X-Forwarded-For"), ","), ",")
		for i := len(hops) - 1; i >= 0; i-- {
			hop, err := netip.ParseAddr(strings.TrimSpace(hops[i]))
			if err != nil {
				break
			}
			ip = hop
			if !g.trusted(hop) {
				break
			}
		}
	}
	return ip
}

func (g *Gateway) trusted(ip netip.Addr) bool {
	for _, p := range g.opts.TrustedProxies {
		if p.Contains(ip.Unmap()) {
			return true
		}
	}
	return false
}

func peerAddr(remote string) netip.Addr {
	ap, err := netip.ParseAddrPort(remote)
	if err != nil {
		return netip.Addr{}
	}
	return ap.Addr().Unmap()
}

// ClientIP is the client address recorded for the request.
func ClientIP(ctx context.Context) netip.Addr {
	info, _ := ctx.Value(requestInfoKey{}).(*requestInfo)
	if info == nil {
		return netip.Addr{}
	}
	return info.ip
}

// cors answers allowed origins' preflights, which carry no token, before authentication.
func (g *Gateway) cors(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		origin := r.Header.Get("Origin")
		if origin != "" && g.originAllowed(origin, r.Host) {
			h := w.Header()
			h.Set("Access-Control-Allow-Origin", origin)
			h.Add("Vary", "Origin")
			h.Set("Access-Control-Expose-Headers", "Mcp-Session-Id, Mcp-Protocol-Version, WWW-Authenticate, Retry-After")
			if r.Method == http.MethodOptions && r.Header.Get("Access-Control-Request-Method") != "" {
				h.Set("Access-Control-Allow-Methods", "GET, POST, DELETE")
				h.Set("Access-Control-Allow-Headers", corsAllowHeaders(r.Header.Get("Access-Control-Request-Headers")))
				h.Add("Vary", "Access-Control-Request-Headers")
				h.Set("Access-Control-Max-Age", "600")
				w.WriteHeader(http.StatusNoContent)
				return
			}
		}
		next.ServeHTTP(w, r)
	})
}

const corsHeaders = "Authorization, Content-Type, Accept, Mcp-Session-Id, Mcp-Protocol-Version, Last-Event-ID, Mcp-Method, Mcp-Name"

// corsAllowHeaders adds the requested Mcp-Param-* headers, only tokens: none can end the list.
func corsAllowHeaders(requested string) string {
	out := corsHeaders
	for name := range strings.SplitSeq(requested, ",") {
		name = strings.TrimSpace(name)
		if len(name) > len(sessionless.ParamHeaderPrefix) && strings.EqualFold(name[:len(sessionless.ParamHeaderPrefix)], sessionless.ParamHeaderPrefix) && isToken(name) {
			out += ", " + name
		}
	}
	return out
}

const (
	mediaJSON = "application/json"
	mediaSSE  = "text/event-stream"
)

// checkPostHeaders: a JSON body in UTF-8, not content-coded, else 415; Accept, else 406.
func checkPostHeaders(r *http.Request) *wire.Error {
	if !contentTypeJSON(r.Header.Get("Content-Type")) {
		return &wire.Error{Status: http.StatusUnsupportedMediaType, Code: jsonrpc.CodeInvalidRequest,
			Message: "the body must be Content-Type: application/json (UTF-8)"}
	}
	if ce := r.Header.Get("Content-Encoding"); ce != "" && !strings.EqualFold(ce, "identity") {
		// A reader in front that decodes it would read another body (RFC 9110 §8.4.1).
		return &wire.Error{Status: http.StatusUnsupportedMediaType, Code: jsonrpc.CodeInvalidRequest,
			Message: "the body must not be content-coded (Content-Encoding)"}
	}
	if !accepts(r.Header, mediaJSON) && !accepts(r.Header, mediaSSE) {
		return &wire.Error{Status: http.StatusNotAcceptable, Code: jsonrpc.CodeInvalidRequest,
			Message: "Accept must allow application/json or text/event-stream"}
	}
	return nil
}

// contentTypeJSON reports whether a Content-Type is application/json as any proxy or WAF in
// front reads it alike: printable ASCII, SP and HTAB only (mime.ParseMediaType folds Unicode:
// "appl\u0130cation/json"); the type before the first ';', SP/HTAB-trimmed, in any ASCII case;
// each ';'-split parameter a plain name=value (value optionally quoted whole): no ';' hidden
// in quotes, no RFC 2231 "charset*=", no quoted-pair, no name twice, at most four. A charset
// must be UTF-8 (RFC 8259 §8.1): a reader honouring "charset=utf-16" reads another body.
func contentTypeJSON(ct string) bool {
	if !sessionless.HeaderSafe(ct) {
		return false
	}
	mt, params, _ := strings.Cut(ct, ";")
	if !strings.EqualFold(strings.Trim(mt, " \t"), mediaJSON) {
		return false
	}
	var seen [4]string // a name given twice is read first or last by each reader
	n := 0
	pieces := strings.Split(params, ";")
	for i, param := range pieces {
		param = strings.Trim(param, " \t")
		if param == "" {
			if i == len(pieces)-1 {
				continue // one trailing ';', which mime allows too
			}
			return false
		}
		name, value, ok := strings.Cut(param, "=")
		if v, quoted := strings.CutPrefix(value, `"`); quoted {
			value, quoted = strings.CutSuffix(v, `"`)
			if !quoted {
				return false
			}
		}
		if !ok || !paramToken(name) || !paramToken(value) {
			return false
		}
		if strings.EqualFold(name, "charset") && !strings.EqualFold(value, "utf-8") {
			return false
		}
		if n == len(seen) {
			return false // no client sends more than a charset
		}
		for _, s := range seen[:n] {
			if strings.EqualFold(s, name) {
				return false
			}
		}
		seen[n] = name
		n++
	}
	return true
}

// paramToken reports whether s is a non-empty RFC 9110 token without '*' (RFC 2231's mark):
// an RFC 2045 token (isToken) less the '{' and '}' RFC 9110 does not allow.
func paramToken(s string) bool { return isToken(s) && !strings.ContainsAny(s, "*{}") }

// accepts reports whether Accept allows mt (RFC 9110 12.5.1); an unreadable element, nothing.
func accepts(h http.Header, mt string) bool {
	values := h.Values("Accept")
	if len(values) == 0 {
		return true
	}
	typ, sub, _ := strings.Cut(mt, "/")
	for _, v := range values {
		for elem := range strings.SplitSeq(v, ",") {
			if strings.TrimSpace(elem) == "" {
				continue
			}
			rng, ok := plainRange(elem)
			if !ok { // parameters, quotes or other bytes: the full reading, which allocates
				var params map[string]string
				var err error
				if rng, params, err = mime.ParseMediaType(elem); err != nil {
					continue
				}
				if q, ok := params["q"]; ok {
					if f, err := strconv.ParseFloat(q, 64); err != nil || f <= 0 {
						continue
					}
				}
			}
			rt, rs, _ := strings.Cut(rng, "/")
			if rng == "*/*" || rng == "*" || (strings.EqualFold(rt, typ) && (rs == "*" || strings.EqualFold(rs, sub))) {
				return true
			}
		}
	}
	return false
}

// plainRange is mime.ParseMediaType for a bare range, without allocating (TestAcceptsAgreesWithMIME).
func plainRange(elem string) (rng string, ok bool) {
	for i := 0; i < len(elem); i++ {
		if c := elem[i]; c >= 0x80 || c == ';' || c == '"' {
			return "", false
		}
	}
	rng = strings.TrimSpace(elem)
	typ, sub, slash := strings.Cut(rng, "/")
	if !isToken(typ) || (slash && !isToken(sub)) {
		return "", false // invalid: let mime.ParseMediaType refuse it
	}
	return rng, true
}

// isToken: RFC 2045 token, as mime reads it: printable ASCII except tspecials.
func isToken(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; c <= 0x20 || c >= 0x7f || strings.IndexByte(`()<>@,;:\"/[]?=`, c) >= 0 {
			return false
		}
	}
	return true
}
