package gateway

import (
	"errors"
	"io"
	"net/http"
	"time"
)

// requestDeadline bounds every request's arrival and frees the connection of every request
// whose body was not read, refused or not.
//
// A request must arrive whole within ReadTimeout: counted from its first byte by the
// http.Server's ReadTimeout when the server has one, otherwise from here. Once it has
// arrived (no body, or the body read to its end) net/http lifts the read deadline itself,
// as it starts reading in the background to notice a client that hangs up; so a long answer
// or a GET stream is not cut by it.
//
// A request whose body was not read to its end (refused by the authenticator, a gate or a
// limit, or a read that failed) would otherwise hold its connection for good: after the
// handler returns, net/http reads what is left of the body before answering, to reuse the
// connection, under whatever read deadline is then in force, and a refusal path may have
// lifted it. The deadline is set to now instead, so that read fails at once, net/http
// answers with Connection: close, and the connection is closed.
func (g *Gateway) requestDeadline(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Body == nil || r.Body == http.NoBody {
			next.ServeHTTP(w, r)
			return
		}
		rc := http.NewResponseController(w)
		if srv, _ := r.Context().Value(http.ServerContextKey).(*http.Server); srv == nil || srv.ReadTimeout <= 0 {
			_ = rc.SetReadDeadline(time.Now().Add(g.opts.ReadTimeout))
		}
		body := &arrival{ReadCloser: r.Body}
		r.Body = body
		next.ServeHTTP(w, r)
		if !body.whole {
			_ = rc.SetReadDeadline(time.Now())
		}
	})
}

// arrival is a request body that notes whether it was read to its end.
type arrival struct {
	io.ReadCloser
	whole bool
}

func (a *arrival) Read(p []byte) (int, error) {
	n, err := a.ReadCloser.Read(p)
	if errors.Is(err, io.EOF) {
		a.whole = true
	}
	return n, err
}
