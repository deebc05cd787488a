package gateway

import (
	"errors"
	"io"
	"net/http"
	"time"
)

// requestDeadline bounds every request's arrival to ReadTimeout (the server's own, if set);
// net/http lifts it once the body is read. A body not read to its end would hold the
// connection for good (net/http reads the rest, under whatever deadline then holds): the
// deadline goes to now, and net/http closes the connection.
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

// arrival is a request body that notes what was read of it, and whether to its end.
type arrival struct {
	io.ReadCloser
	n     int64
	whole bool
}

func (a *arrival) Read(p []byte) (int, error) {
	n, err := a.ReadCloser.Read(p)
	a.n += int64(n)
	if errors.Is(err, io.EOF) {
		a.whole = true
	}
	return n, err
}
