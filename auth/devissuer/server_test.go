package devissuer

import (
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestServerBoundsHeaderReads: the token endpoint listens on a real port, so a client that
// sends its headers a byte at a time must not hold a connection for ever.
func TestServerBoundsHeaderReads(t *testing.T) {
	i := startIssuer(t, Options{})
	if d := i.srv.ReadHeaderTimeout; d <= 0 || d > time.Minute {
		t.Errorf("ReadHeaderTimeout = %v, want a bound of at most a minute", d)
	}
}

// TestServeFailureIsLogged: when the server stops for any reason other than Close, the
// issuer says so instead of going quiet with its port still advertised.
func TestServeFailureIsLogged(t *testing.T) {
	w := &waitWriter{want: "devissuer: serve", found: make(chan struct{})}
	i := startIssuer(t, Options{Logger: slog.New(slog.NewTextHandler(w, nil))})
	if err := i.listener.Close(); err != nil { // closed under the server: Serve fails
		t.Fatal(err)
	}
	select {
	case <-w.found:
	case <-time.After(10 * time.Second):
		t.Fatal("no serve error logged within 10s")
	}
}

// waitWriter closes found once a write contains want.
type waitWriter struct {
	want  string
	once  sync.Once
	found chan struct{}
}

func (w *waitWriter) Write(p []byte) (int, error) {
	if strings.Contains(string(p), w.want) {
		w.once.Do(func() { close(w.found) })
	}
	return len(p), nil
}
