package gateway

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/gemgate/gemgate/jsonrpc"
)

// A worker that could not be had for an initialize, for a reason none of the pool's named
// errors gives (a start that panicked, as those waiting on it learn it), is a worker that
// could not be started: 503 with Retry-After, as before the eras shared callError; never the
// 200 of a call whose worker is gone, since no call was made.
func TestAttachFailureOfNoKnownKindIs503(t *testing.T) {
	f := newFixture(t)
	msg := &jsonrpc.Message{ID: []byte(`1`), Method: "initialize"}
	unnamed := errors.New("pool: the worker's start failed") // the pool's errStartPanicked
	var he *httpError
	if !errors.As(f.gw.attachError(httptest.NewRecorder(), msg, unnamed), &he) {
		t.Fatal("initialize: no refusal")
	}
	if he.Status != http.StatusServiceUnavailable || he.Header.Get("Retry-After") == "" {
		t.Errorf("initialize: %d %q (Retry-After %q), want 503 with Retry-After", he.Status, he.Message, he.Header.Get("Retry-After"))
	}
	if !errors.As(sessionlessAttachError(msg, unnamed), &he) {
		t.Fatal("sessionless: no refusal")
	}
	if he.Status != http.StatusServiceUnavailable || he.Header.Get("Retry-After") == "" {
		t.Errorf("sessionless: %d %q (Retry-After %q), want 503 with Retry-After", he.Status, he.Message, he.Header.Get("Retry-After"))
	}
}
