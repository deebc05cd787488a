package gateway

import (
	"context"
	"crypto/rand"
	"net/http"
	"net/netip"
	"os"
	"strconv"
	"sync/atomic"
)

// requestInfo is what the gateway notes of every request for its logs: the client's address
// and the request's id. Both go into the request's context as one value, so that they cost
// one context layer and one copy of the request, not one each; the id is formatted only
// when a log line asks for it (requestID), which on the hot path none does.
type requestInfo struct {
	ip     netip.Addr
	client string // the client's X-Request-Id, if it sent one
	seq    uint64 // else the request's number in this process
}

type requestInfoKey struct{}

// requestIDHeader is the header whose value, when a client (or a proxy) sends one, is the
// request's id.
const requestIDHeader = "X-Request-Id"

// requestIDPrefix starts every id gemgate makes: host/random, the random part telling one
// process from another, then -number counting the process's requests.
var (
	requestIDPrefix = newRequestIDPrefix()
	requestSeq      atomic.Uint64
)

func newRequestIDPrefix() string {
	host, err := os.Hostname()
	if host == "" || err != nil {
		host = "localhost"
	}
	const base62 = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
	var b [10]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic("gateway: no randomness for the request id prefix: " + err.Error())
	}
	for i := range b {
		b[i] = base62[int(b[i])%len(base62)]
	}
	return host + "/" + string(b[:])
}

// requestInfo records the request's address and id (see requestInfo).
func (g *Gateway) requestInfo(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		info := &requestInfo{ip: g.clientIP(r), client: r.Header.Get(requestIDHeader)}
		if !clientRequestIDOK(info.client) {
			info.client = ""
			info.seq = requestSeq.Add(1)
		} else if info.client == "" {
			info.seq = requestSeq.Add(1)
		}
		next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), requestInfoKey{}, info)))
	})
}

// maxClientRequestID bounds the X-Request-Id the gateway honours: ids in use (UUIDs, a
// proxy's trace ids) are well under it.
const maxClientRequestID = 128

// clientRequestIDOK: an X-Request-Id the gateway honours, empty or up to maxClientRequestID
// bytes of visible ASCII. Any other is the client's to choose and goes into log lines as it
// came: a megabyte of it, or control bytes, are refused (the request gets an id of the
// gateway's own), not written into every line about the request.
func clientRequestIDOK(id string) bool {
	if len(id) > maxClientRequestID {
		return false
	}
	for i := 0; i < len(id); i++ {
		if c := id[i]; c <= ' ' || c >= 0x7f {
			return false
		}
	}
	return true
}

// loggedSessionID is a request's Mcp-Session-Id as log and trace lines carry it: the client's
// to choose as much as X-Request-Id is, it goes into a line only if clientRequestIDOK would
// honour it as a request id (gemgate's own session ids are), else as its length alone.
func loggedSessionID(h http.Header) string {
	id := h.Get(headerSessionID)
	if clientRequestIDOK(id) {
		return id
	}
	return "(invalid, " + strconv.Itoa(len(id)) + " bytes)"
}

// requestID is the request's id for a log line: the client's, or host/random-000042.
func requestID(ctx context.Context) string {
	info, _ := ctx.Value(requestInfoKey{}).(*requestInfo)
	switch {
	case info == nil:
		return ""
	case info.client != "":
		return info.client
	}
	n := strconv.FormatUint(info.seq, 10)
	for len(n) < 6 {
		n = "0" + n
	}
	return requestIDPrefix + "-" + n
}
