package sessionless

import (
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gemgate/gemgate/auth"
)

// A sessionless worker's input-required result keeps its keys and everything else; only its
// requestState is replaced, by gemgate's state that carries it (restored on the retry) and
// binds it to the user, the access mode, the worker and the request. Other results, and one
// without a requestState, are not touched; one that cannot be wrapped is refused.
func TestWrapInputRequired(t *testing.T) {
	a := New(Config{})
	base := stateClaims{Issuer: "iss", Subject: "alice", ReadOnly: true, Worker: "w0002", Method: "tools/call", Name: "ask"}
	in := `{"resultType":"input_required","inputRequests":{"step2":{"method":"elicitation/create","params":{}},"b":{"method":"roots/list"}},"requestState":"round=2;name=Ann","_meta":{"x":1}}`
	out, err := a.wrapInputRequired(base, json.RawMessage(in))
	if err != nil {
		t.Fatal(err)
	}
	var res struct {
		InputRequests map[string]json.RawMessage `json:"inputRequests"`
		RequestState  string                     `json:"requestState"`
		Meta          json.RawMessage            `json:"_meta"`
	}
	if err := json.Unmarshal(out, &res); err != nil {
		t.Fatal(err)
	}
	if len(res.InputRequests) != 2 || res.InputRequests["step2"] == nil || string(res.Meta) != `{"x":1}` {
		t.Errorf("the worker's result changed: %s", out)
	}
	if !strings.HasPrefix(res.RequestState, statePrefix) {
		t.Fatalf("requestState %q is not gemgate's", res.RequestState)
	}
	c, err := a.key.open(res.RequestState, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if !c.Pass || c.WorkerState != "round=2;name=Ann" || c.Park != "" || !slices.Equal(c.Keys, []string{"b", "step2"}) ||
		c.Issuer != "iss" || c.Subject != "alice" || !c.ReadOnly || c.Worker != "w0002" || c.Method != "tools/call" || c.Name != "ask" {
		t.Errorf("claims %+v", c)
	}
	if err := c.belongsTo(auth.Principal{Issuer: "iss", Subject: "alice"}, false, "tools/call", "ask"); !errors.Is(err, errStateNotYours) {
		t.Errorf("a read-write caller with a read-only state: %v", err)
	}

	for _, unchanged := range []string{
		`{"resultType":"complete","content":[]}`,
		`{"resultType":"input_required","inputRequests":{"k":{}}}`,
	} {
		if out, err := a.wrapInputRequired(base, json.RawMessage(unchanged)); err != nil || string(out) != unchanged {
			t.Errorf("%s: %s %v", unchanged, out, err)
		}
	}
	for name, bad := range map[string]string{
		"state not a string":      `{"resultType":"input_required","inputRequests":{},"requestState":3}`,
		"inputRequests missing":   `{"resultType":"input_required","requestState":"s"}`,
		"state too large to bind": `{"resultType":"input_required","inputRequests":{},"requestState":"` + strings.Repeat("x", maxStateLen) + `"}`,
	} {
		if _, err := a.wrapInputRequired(base, json.RawMessage(bad)); err == nil {
			t.Errorf("%s: wrapped", name)
		}
	}
}

// TestWrapInputRequiredAtTheBound: a worker's requestState is passed on while gemgate's state
// wrapping it is at most maxStateLen bytes, exactly that long included: the largest state
// handed out is maxStateLen long, and a byte more of the worker's is refused.
func TestWrapInputRequiredAtTheBound(t *testing.T) {
	a := New(Config{})
	now := time.Unix(1_800_000_000, 0)
	a.Now = func() time.Time { return now }
	base := stateClaims{Issuer: "iss", Subject: "alice", Worker: "w0002", Method: "tools/call", Name: "ask"}
	wrap := func(n int) (string, error) {
		out, err := a.wrapInputRequired(base, json.RawMessage(`{"resultType":"input_required","inputRequests":{},"requestState":"`+strings.Repeat("x", n)+`"}`))
		if err != nil {
			return "", err
		}
		var res struct{ RequestState string }
		if err := json.Unmarshal(out, &res); err != nil {
			t.Fatal(err)
		}
		return res.RequestState, nil
	}
	// The largest worker state that is passed on, by bisection: lo wraps, hi does not.
	lo, hi := 0, maxStateLen
	for hi-lo > 1 {
		if mid := (lo + hi) / 2; func() bool { _, err := wrap(mid); return err == nil }() {
			lo = mid
		} else {
			hi = mid
		}
	}
	state, err := wrap(lo)
	if err != nil || len(state) != maxStateLen {
		t.Errorf("the largest state handed out is %d bytes (%v), want exactly maxStateLen, %d", len(state), err, maxStateLen)
	}
	if _, err := a.key.open(state, now); err != nil {
		t.Errorf("the state at the bound is not taken back: %v", err)
	}
	if _, err := wrap(hi); !errors.Is(err, errStateTooLarge) {
		t.Errorf("a worker state a byte larger: %v, want errStateTooLarge", err)
	}
}

// TestInputRequiredTimeoutDefault: with no input_required_timeout set, a client has the
// documented two minutes to retry with the requestState it was handed.
func TestInputRequiredTimeoutDefault(t *testing.T) {
	for _, set := range []time.Duration{0, -time.Second} {
		a := New(Config{InputRequiredTimeout: set})
		now := time.Unix(1_800_000_000, 0)
		a.Now = func() time.Time { return now }
		out, err := a.wrapInputRequired(stateClaims{Issuer: "iss", Subject: "alice"},
			json.RawMessage(`{"resultType":"input_required","inputRequests":{},"requestState":"ws"}`))
		if err != nil {
			t.Fatal(err)
		}
		var res struct{ RequestState string }
		if err := json.Unmarshal(out, &res); err != nil {
			t.Fatal(err)
		}
		if _, err := a.key.open(res.RequestState, now.Add(2*time.Minute)); err != nil {
			t.Errorf("timeout %v: a retry after 2 minutes: %v, want it taken", set, err)
		}
		if _, err := a.key.open(res.RequestState, now.Add(2*time.Minute+time.Second)); !errors.Is(err, errStateExpired) {
			t.Errorf("timeout %v: a retry after 2 minutes and a second: %v, want it expired", set, err)
		}
	}
}
