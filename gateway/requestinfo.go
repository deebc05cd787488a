package gateway

import (
	"cmp"
	"context"
	"crypto/rand"
	"fmt"
	"net/http"
	"net/netip"
	"os"
	"strconv"
	"sync/atomic"
)

// requestInfo is the client's address and the request's id, for logs, in one context value.
type requestInfo struct {
	ip     netip.Addr
	client string // the client's X-Request-Id, if it sent one
	seq    uint64 // else the request's number in this process
	// audited: the request's tools/call has its audit line (auditCall), which is written once
	audited atomic.Bool
}

type requestInfoKey struct{}

const requestIDHeader = "X-Request-Id"

// requestIDPrefix starts every id gemgate makes: host/random (the process), then -number.
var (
	requestIDPrefix = newRequestIDPrefix()
	requestSeq      atomic.Uint64
)

func newRequestIDPrefix() string {
	host, _ := os.Hostname() // "" on an error
	host = cmp.Or(host, "localhost")
	const base62 = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
	var b [10]byte
	_, _ = rand.Read(b[:]) // never fails: it crashes the program instead
	for i := range b {
		b[i] = base62[int(b[i])%len(base62)]
	}
	return host + "/" + string(b[:])
}

func (g *Gateway) requestInfo(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		info := &requestInfo{ip: g.clientIP(r), client: r.Header.Get(requestIDHeader)}
		if !clientRequestIDOK(info.client) {
			info.client = ""
		}
		if info.client == "" {
			info.seq = requestSeq.Add(1)
		}
		next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), requestInfoKey{}, info)))
	})
}

const maxClientRequestID = 128 // UUIDs and proxies' trace ids are well under it

// clientRequestIDOK: an X-Request-Id short and visible ASCII enough for the log.
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

// loggedSessionID is Mcp-Session-Id for the log: as is if clientRequestIDOK, else its length.
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
	return fmt.Sprintf("%s-%06d", requestIDPrefix, info.seq)
}
