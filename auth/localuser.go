package auth

import (
	"log/slog"
	"net/http"
)

// forwardingHeaders are the headers proxies, load balancers, CDNs and tunnels add to what
// they pass on. A client on this machine talking to gemgate itself sends none of them.
var forwardingHeaders = []string{
	"Forwarded", "Via",
	"X-Forwarded-For", "X-Forwarded-Host", "X-Forwarded-Proto", "X-Forwarded-Port",
	"X-Forwarded-Server", "X-Real-Ip", "X-Client-Ip", "True-Client-Ip", "Cf-Connecting-Ip",
	"Fastly-Client-Ip", "X-Original-Forwarded-For", "X-Envoy-External-Address",
}

// LocalUser is the `auth: none` middleware of a served gateway: every request acts as p, and
// is served only if it is plainly the local user's own. A proxy or tunnel on this machine
// could carry other people's requests to the loopback listener; they show it by a forwarding
// header, or a Host that is not a loopback name, and are refused 403. So is a request from
// another account of the host, which reaches a loopback listener too (localpeer.go; its
// server's ConnContext is LocalConnContext).
func LocalUser(p Principal, log *slog.Logger) func(http.Handler) http.Handler {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	anonymous := Anonymous(p)
	return func(next http.Handler) http.Handler {
		serve := anonymous(next)
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if why := notLocal(r); why != "" {
				log.Warn("request refused: auth none serves only the local user", "reason", why)
				writeJSONError(w, http.StatusForbidden, "access_denied",
					"authentication is off (auth: none), so gemgate serves only its own user on this machine, and "+why+
						"; to serve others, use auth: oidc")
				return
			}
			serve.ServeHTTP(w, r)
		})
	}
}

// notLocal says why r did not come straight from a client on this machine, or "" if it did.
func notLocal(r *http.Request) string {
	for _, name := range forwardingHeaders {
		if _, ok := r.Header[name]; ok {
			return "this request came through a proxy or tunnel (it carries " + name + ")"
		}
	}
	if !loopbackHostHeader(r.Host) {
		return "this request was addressed to a name that is not loopback (its Host header)"
	}
	return otherAccount(r)
}
