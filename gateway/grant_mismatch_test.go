package gateway

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/gemgate/gemgate/pool"
)

// A call that may not start or renew its session's worker is told why, retryably: a token
// without the write scope, or one granting other scopes or audiences than the worker's.
func TestCallErrorOfAStartThePoolRefused(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want string
	}{
		{pool.ErrAccessMismatch, "lacks the write scope"},
		{pool.ErrGrantMismatch, "grants the scopes and audiences of the token the session was opened with"},
	} {
		he := callError(json.RawMessage(`7`), tc.err)
		if he.Status != http.StatusServiceUnavailable || he.Header.Get("Retry-After") == "" || !strings.Contains(he.Message, tc.want) {
			t.Errorf("%v: %d, Retry-After %q, %q; want 503, a Retry-After and %q", tc.err, he.Status, he.Header.Get("Retry-After"), he.Message, tc.want)
		}
	}
}
