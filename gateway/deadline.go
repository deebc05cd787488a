package gateway

import (
	"errors"
	"io"
	"net/http"
	"time"
)

// requestDeadline bounds every request's arrival to ReadTimeout (the http.Server's own, from
// the first byte, when it has one); net/http lifts the deadline once the body is read, so a
// long answer or stream is not cut.
//
// A body not read to its end (a refusal, a failed read) would hold the connection for good:
// net/http reads the rest after the handler, under whatever deadline is then in force. The
// deadline is set to now, so net/http answers with Connection: close instead.
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
