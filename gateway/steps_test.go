package gateway

import (
	"encoding/json"
	"fmt"
	"net/http"
	"reflect"
	"testing"

	"github.com/gemgate/gemgate/pool"
)

// Every step the 2026-07-28 adapter takes is given: a step left out would compile (Steps is a
// struct of funcs) and panic on the first request that needs it.
func TestSessionlessStepsAreAllGiven(t *testing.T) {
	f := newFixture(t)
	v := reflect.ValueOf(f.gw.sessionlessSteps())
	for i := range v.NumField() {
		if v.Field(i).IsNil() {
			t.Errorf("sessionless.Steps.%s is not given", v.Type().Field(i).Name)
		}
	}
}

// A 2026-07-28 call or listen stream whose worker went away between attach and call is told
// to try again (503 with Retry-After), not that a session it never had is gone; every other
// error reads as a session's.
func TestSessionlessCallErrorOfAGoneWorker(t *testing.T) {
	f := newFixture(t)
	callErr := f.gw.sessionlessSteps().CallError
	id := json.RawMessage(`7`)
	he := callErr(id, fmt.Errorf("calling: %w", pool.ErrDetached))
	if he.Status != http.StatusServiceUnavailable || he.Message != "the worker is gone; try again" ||
		he.Header.Get("Retry-After") != "5" || string(he.ID) != "7" {
		t.Errorf("gone worker: %d %q Retry-After %q id %s; want 503, the worker is gone, 5, 7",
			he.Status, he.Message, he.Header.Get("Retry-After"), he.ID)
	}
	for _, err := range []error{pool.ErrWorkerBusy, pool.ErrTooManyWorkers, pool.ErrClosed} {
		if got, want := callErr(id, err), callError(id, err); !reflect.DeepEqual(got, want) {
			t.Errorf("%v: %+v, want the session's %+v", err, got, want)
		}
	}
}
