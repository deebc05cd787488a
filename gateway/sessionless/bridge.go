package sessionless

import (
	"crypto/rand"
	"encoding/json"
	"errors"
	"math"
	"sync"
	"time"

	"github.com/gemgate/gemgate/gateway/wire"
	"github.com/gemgate/gemgate/jsonrpc"
	"github.com/gemgate/gemgate/policy"
	"github.com/gemgate/gemgate/pool"
)

// The input-required bridge. 2026-07-28 has no server-to-client requests: a server that needs
// the client's input answers input_required, and the client retries the call with
// inputResponses. A legacy worker instead sends elicitation/create, sampling/createMessage or
// roots/list within its call and waits. gemgate parks that call (still running, still
// attached) with the worker's requests, answers input_required with a requestState naming it
// (state.go), and on the retry answers the worker's requests with the client's responses and
// goes on streaming the call. Without a retry within input_required_timeout, the worker's
// requests get an error and the call is left to finish unseen.

const (
	// DefaultInputRequiredTimeout is how long a parked call waits for the client's retry.
	DefaultInputRequiredTimeout = 2 * time.Minute
	maxParkedPerUser            = 8
	maxParkedTotal              = 1024
	// bridgeGather is how long gemgate waits after a worker's first request for the others it
	// sends at once, so that one input-required result carries them all.
	bridgeGather = 30 * time.Millisecond
	// parkedDrain bounds the wait for an abandoned call's answer before the worker is let go.
	parkedDrain = 30 * time.Second
)

var errTooManyParked = errors.New("too many calls are waiting for your input; answer or abandon one first")

// parked is a call waiting for its client's retry.
type parked struct {
	id       string
	owner    owner
	access   policy.Access
	member   *pool.Member
	caller   *caller
	call     *pool.Call
	msg      *jsonrpc.Message // the original request
	name     string
	declared declared                    // the client capabilities the request declared
	requests map[string]*jsonrpc.Message // the worker's requests by input key (gemgate's id)
	timer    *time.Timer
	seq      uint64 // the order it was parked in (parkTable.add)
	// progressToken is the current request's params._meta.progressToken (nil when none): the
	// first request's, then each retry's.
	progressToken json.RawMessage
}

// parkTable holds parked calls; its zero value is ready.
type parkTable struct {
	mu     sync.Mutex
	calls  map[string]*parked
	byUser map[owner]int
	seq    uint64
}

// add adds p. When p's user has maxParkedPerUser calls parked already, the oldest is taken out
// and returned for the caller to abandon: a client that left that many waiting has likeliest
// given up on it. Past maxParkedTotal in all, p is refused.
func (t *parkTable) add(p *parked) (evicted *parked, err error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.calls == nil {
		t.calls, t.byUser = map[string]*parked{}, map[owner]int{}
	}
	if len(t.calls) >= maxParkedTotal {
		return nil, errTooManyParked
	}
	if t.byUser[p.owner] >= maxParkedPerUser {
		for _, q := range t.calls {
			if q.owner == p.owner && (evicted == nil || q.seq < evicted.seq) {
				evicted = q
			}
		}
		t.removeLocked(evicted)
	}
	t.seq++
	p.seq = t.seq
	t.calls[p.id] = p
	t.byUser[p.owner]++
	return evicted, nil
}

// take removes a parked call, nil when it is not (or no longer) there.
func (t *parkTable) take(id string) *parked {
	t.mu.Lock()
	defer t.mu.Unlock()
	p := t.calls[id]
	if p == nil {
		return nil
	}
	t.removeLocked(p)
	return p
}

func (t *parkTable) removeLocked(p *parked) {
	delete(t.calls, p.id)
	if t.byUser[p.owner]--; t.byUser[p.owner] <= 0 {
		delete(t.byUser, p.owner)
	}
	if p.timer != nil {
		p.timer.Stop()
	}
}

// park parks a call with the worker's requests and returns the input-required result for
// the client. On an error the worker's requests are refused with it.
func (a *Adapter) park(p *parked) (json.RawMessage, error) {
	p.id = rand.Text()
	inputs := map[string]any{}
	keys := make([]string, 0, len(p.requests))
	for key, req := range p.requests {
		keys = append(keys, key)
		in := map[string]any{"method": req.Method}
		if wire.IsObject(req.Params) { // a request without params (roots/list) has none, not null
			in["params"] = req.Params
		}
		inputs[key] = in
	}
	timeout := a.InputRequiredTimeout
	// The timer is made before the table has p (whose other users read the field) and runs
	// only once it does: fired earlier, it would find nothing to abandon and p would stay.
	id := p.id // this park's: a retry parks p again under another (resume)
	p.timer = time.AfterFunc(time.Duration(math.MaxInt64), func() {
		if taken := a.parks.take(id); taken != nil {
			abandon(taken, "the client did not answer in time")
		}
	})
	p.call.Waiting(true) // its worker's next questions are no longer taken for its own
	// Its progress and log lines go nowhere until the retry, a request of its own with its
	// own token and level.
	p.call.SetProgressToken(nil)
	logs := p.caller.logLevel.Swap(-1)
	evicted, err := a.parks.add(p)
	if err != nil {
		p.timer.Stop()
		p.call.Waiting(false)
		p.call.SetProgressToken(p.progressToken) // the call goes on for its request
		p.caller.logLevel.Store(logs)
		for _, req := range p.requests {
			p.member.Refuse(req.ID, err.Error())
		}
		return nil, err
	}
	p.timer.Reset(timeout)
	if evicted != nil {
		abandon(evicted, "a newer call of the same user's took its place (at most 8 wait for their client)")
	}
	c := p.claims()
	c.Park, c.Keys, c.Expires = p.id, keys, a.Now().Add(timeout).Unix()
	state := a.key.seal(c)
	return json.Marshal(map[string]any{"resultType": "input_required", "inputRequests": inputs, "requestState": state})
}

// claims are what a requestState for p's retry binds: who, which worker, which request.
func (p *parked) claims() stateClaims {
	return stateClaims{Issuer: p.owner.issuer, Subject: p.owner.subject, ReadOnly: p.access.ReadOnly,
		Worker: p.member.WorkerID(), Method: p.msg.Method, Name: p.name}
}

// abandon ends a parked call, taken from the table, whose retry will not come: the worker's
// requests get an error, the call's answer is waited for (bounded) and dropped, and the worker
// let go. The call waits no more: refused, the worker may ask again for it, and that question
// is the call's (refused too), not another call's that happens to be the only other one in
// flight (askerLocked).
func abandon(p *parked, why string) {
	p.call.Waiting(false) // before the refusals: the worker's next question may follow them
	for _, req := range p.requests {
		p.member.Refuse(req.ID, why)
	}
	go func() {
		defer p.member.Detach()
		t := time.NewTimer(parkedDrain)
		defer t.Stop()
		for {
			select {
			case <-p.call.Result():
				return
			case req := <-p.caller.requests:
				p.member.Refuse(req.ID, why)
			case <-t.C:
				p.call.Cancel(why)
				return
			}
		}
	}()
}

// workerRequestKey is the input key of a worker request: gemgate's own id for it, unquoted.
func workerRequestKey(req *jsonrpc.Message) string {
	var s string
	if json.Unmarshal(req.ID, &s) == nil {
		return s
	}
	return string(req.ID)
}
