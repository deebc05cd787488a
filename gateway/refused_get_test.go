package gateway

import (
	"context"
	"net/http"
	"testing"
	"time"
)

// refusedWithin is how long a request that must be refused may take to be answered.
const refusedWithin = 10 * time.Second

// refused sends a request that the gateway must refuse, with a deadline: a GET stream wrongly
// let in would otherwise be read for as long as it lasts (hours, with keepalives), and the
// test would hang until go test's timeout instead of failing. It fails the test on a stream,
// or on no answer, within the deadline.
func (c *client) refused(t *testing.T, what, method, body string, header ...string) reply {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), refusedWithin)
	defer cancel()
	r, err := c.do(ctx, method, body, header...)
	if err != nil {
		t.Fatalf("%s: %v: it was let in and its stream stayed open, or it was not answered, within %v; want it refused", what, err, refusedWithin)
	}
	return r
}

// refusedGET is refused for a GET.
func (c *client) refusedGET(t *testing.T, what string, header ...string) reply {
	t.Helper()
	return c.refused(t, what, http.MethodGet, "", header...)
}
