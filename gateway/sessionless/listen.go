package sessionless

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gemgate/gemgate/gateway/wire"
	"github.com/gemgate/gemgate/internal/aside"
	textclip "github.com/gemgate/gemgate/internal/clip"
	"github.com/gemgate/gemgate/internal/jsontext"
	"github.com/gemgate/gemgate/jsonrpc"
	"github.com/gemgate/gemgate/pool"
)

// subscriptions/listen (basic/patterns/subscriptions.mdx) replaces the legacy GET stream and
// resources/subscribe: one long-lived SSE answer, first notifications/subscriptions/acknowledged
// with what gemgate agreed to, then the worker's notifications the client asked for, tagged
// with _meta subscriptionId = the listen request's id. A listen stream is a pool caller of the
// worker of its token's (issuer, subject, access mode): never another user's or mode's.

const (
	// MaxListensPerUser bounds the listen streams one user holds open at once.
	MaxListensPerUser        = 16
	maxResourceSubscriptions = 100 // the URIs one listen request may name
	// listenSubscribeTimeout bounds each resources/subscribe sent for a listen request's URIs.
	listenSubscribeTimeout = 10 * time.Second
)

// listenFilter is what a client asked to hear, or what gemgate agreed to.
type listenFilter struct {
	ToolsListChanged      bool     `json:"toolsListChanged,omitempty"`
	PromptsListChanged    bool     `json:"promptsListChanged,omitempty"`
	ResourcesListChanged  bool     `json:"resourcesListChanged,omitempty"`
	ResourceSubscriptions []string `json:"resourceSubscriptions,omitempty"`
}

func (f listenFilter) empty() bool {
	return !f.ToolsListChanged && !f.PromptsListChanged && !f.ResourcesListChanged && len(f.ResourceSubscriptions) == 0
}

// wants reports whether a worker notification passes the filter.
func (f listenFilter) wants(method string) bool {
	switch method {
	case "notifications/tools/list_changed":
		return f.ToolsListChanged
	case "notifications/prompts/list_changed":
		return f.PromptsListChanged
	case "notifications/resources/list_changed":
		return f.ResourcesListChanged
	case "notifications/resources/updated":
		return len(f.ResourceSubscriptions) > 0 // the pool delivers only the URIs subscribed here
	}
	return false
}

// readListenFilter reads params.notifications strictly.
func readListenFilter(msg *jsonrpc.Message) (listenFilter, error) {
	var f listenFilter
	params, err := msg.ParamsObject()
	if err != nil {
		return f, err
	}
	n, ok, err := params.Object("notifications")
	if err != nil || !ok {
		return f, err
	}
	if err := n.Exact("toolsListChanged", "promptsListChanged", "resourcesListChanged",
		"resourceSubscriptions"); err != nil {
		return f, err
	}
	for _, b := range []struct {
		key string
		to  *bool
	}{{"toolsListChanged", &f.ToolsListChanged}, {"promptsListChanged", &f.PromptsListChanged},
		{"resourcesListChanged", &f.ResourcesListChanged}} {
		if raw, ok := n.Raw(b.key); ok && json.Unmarshal(raw, b.to) != nil {
			return f, &jsonrpc.TypeError{Field: "params.notifications." + b.key, Want: "a boolean"}
		}
	}
	if raw, ok := n.Raw("resourceSubscriptions"); ok && string(raw) != "null" {
		if err := json.Unmarshal(raw, &f.ResourceSubscriptions); err != nil {
			return f, &jsonrpc.TypeError{Field: "params.notifications.resourceSubscriptions", Want: "an array of strings"}
		}
		if jsontext.HasLoneSurrogate(raw) {
			// Read as every string gemgate decides on is (jsonrpc's Object.String): not one
			// URI to it and another to the client.
			return f, &jsonrpc.TypeError{Field: "params.notifications.resourceSubscriptions", Want: "strings without a lone UTF-16 surrogate escape"}
		}
	}
	return f, nil
}

// agreed is the part of f the worker can honour, by its capabilities as the client reads them
// (server/discover): a capability given twice is its last member, and a null one is none.
// Pointers, since a null member leaves a struct as an earlier member filled it.
func (f listenFilter) agreed(initResult json.RawMessage) listenFilter {
	var init struct {
		Capabilities struct {
			Tools, Prompts *struct{ ListChanged bool }
			Resources      *struct{ ListChanged, Subscribe bool }
		}
	}
	_ = json.Unmarshal(initResult, &init)
	c := init.Capabilities
	var out listenFilter
	out.ToolsListChanged = f.ToolsListChanged && c.Tools != nil && c.Tools.ListChanged
	out.PromptsListChanged = f.PromptsListChanged && c.Prompts != nil && c.Prompts.ListChanged
	if c.Resources != nil {
		out.ResourcesListChanged = f.ResourcesListChanged && c.Resources.ListChanged
		if c.Resources.Subscribe {
			out.ResourceSubscriptions = f.ResourceSubscriptions
		}
	}
	return out
}

// listenCounter counts each user's open listen streams; its zero value is ready.
type listenCounter struct {
	mu sync.Mutex
	n  map[owner]int
}

func (c *listenCounter) take(o owner) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.n == nil {
		c.n = map[owner]int{}
	}
	if c.n[o] >= MaxListensPerUser {
		return false
	}
	c.n[o]++
	return true
}

func (c *listenCounter) release(o owner) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.n[o]--; c.n[o] <= 0 {
		delete(c.n, o)
	}
}

// listenCaller is a listen stream: its attachment to the worker, and what its wait needs.
type listenCaller struct {
	attachment
	// filter is set once the worker's capabilities are known, after the attach: until then
	// (nil) nothing passes. The pool delivers from the worker's reading goroutine.
	filter atomic.Pointer[listenFilter]
	subID  json.RawMessage
	events wire.EventQueue // the worker's notifications, as a call's events are bounded
	owner  *owner          // nil until it holds one of its user's listen streams (listenCounter)
	member *pool.Member    // nil until attached
	stream *wire.SSE
}

func (c *listenCaller) Deliver(d pool.Delivery) {
	if d.Request || d.Call != nil {
		return // a call's messages and worker requests never go to a listen stream
	}
	msg, err := jsonrpc.Parse(d.Message, jsonrpc.Options{})
	f := c.filter.Load()
	if err != nil || f == nil || !msg.IsNotification() || !f.wants(msg.Method) {
		return
	}
	tagged, err := tagSubscription(msg, c.subID)
	if err != nil {
		return
	}
	// A client that does not read loses notifications (past eventBuffer, or a megabyte beyond
	// the first), never gemgate's memory.
	c.events.Push(tagged, eventBuffer)
}

// tagSubscription adds _meta subscriptionId to a notification's params.
func tagSubscription(msg *jsonrpc.Message, subID json.RawMessage) ([]byte, error) {
	params := map[string]json.RawMessage{}
	if len(msg.Params) > 0 && string(msg.Params) != "null" {
		if err := json.Unmarshal(msg.Params, &params); err != nil {
			return nil, err
		}
	}
	meta := map[string]json.RawMessage{}
	if raw, ok := params["_meta"]; ok {
		if err := json.Unmarshal(raw, &meta); err != nil {
			return nil, err
		}
	}
	meta[MetaSubscriptionID] = subID
	b, err := json.Marshal(meta)
	if err != nil {
		return nil, err
	}
	params["_meta"] = b
	p, err := json.Marshal(params)
	if err != nil {
		return nil, err
	}
	out := *msg
	out.Params = p
	return out.Encode(), nil
}

// listen serves one subscriptions/listen request until the client closes it, the worker lets
// go, or the gateway shuts down (then the request gets its result: a graceful end).
//
// The stream is opened aside: opening it would grow the connection's goroutine to 16 KiB,
// which then waits here, idle, for as long as the client listens (aside.Run,
// TestIdleListenStackNeverDoubles).
func (a *Adapter) listen(w http.ResponseWriter, r *http.Request, q *request) error {
	c := &listenCaller{subID: q.msg.ID}
	defer a.closeListen(c) // a panic's too: aside.Run raises it again here
	var open bool
	var err error
	aside.Run(func() { open, err = a.openListen(w, r, q, c) })
	if !open {
		return err
	}
	// The stream may listen for hours under frames that keep the request: its token goes
	// from the headers, and the wait holds a done channel, not the request's context.
	end, stop := a.Steps.StreamLife(r)
	defer stop()
	a.waitListen(c, r.Context().Done(), end)
	return nil
}

// openListen attaches a listen request's stream c to the user's worker, subscribes what it
// asks for and starts the stream with its acknowledgement. It returns false when the request
// is done: refused (the error), its stream lost, or nothing agreed (then it has its result).
func (a *Adapter) openListen(w http.ResponseWriter, r *http.Request, q *request, c *listenCaller) (bool, error) {
	msg := q.msg
	want, err := readListenFilter(msg)
	if err != nil {
		return false, strictError(msg, err)
	}
	if len(want.ResourceSubscriptions) > maxResourceSubscriptions {
		return false, refusal(msg, jsonrpc.CodeInvalidParams, "too many resourceSubscriptions")
	}
	o := ownerOf(q.p)
	if !a.listens.take(o) {
		return false, wire.TooManyRequests(msg.ID, "too many subscriptions/listen streams open for this user", a.ListenRetryAfter)
	}
	c.owner = &o
	c.attachment, c.events = newAttachment(), wire.NewEventQueue() // past the cheap refusals
	m, initResult, err := a.attach(r.Context(), q.id, c, &q.mr)
	if err != nil {
		return false, a.attachError(msg, err)
	}
	c.member, c.stream = m, wire.NewSSE(w, a.WriteTimeout)
	agreed := want.agreed(initResult)
	for _, uri := range agreed.ResourceSubscriptions {
		if he := a.listenSubscribe(r.Context(), m, q, uri); he != nil {
			return false, he
		}
	}
	c.filter.Store(&agreed)

	if c.stream.Start() != nil {
		return false, nil
	}
	ackParams := map[string]any{"_meta": map[string]json.RawMessage{MetaSubscriptionID: msg.ID}, "notifications": agreed}
	if c.stream.Event(jsonrpc.Notification("notifications/subscriptions/acknowledged", ackParams).Encode()) != nil {
		return false, nil
	}
	if agreed.empty() {
		c.end()
		return false, nil
	}
	return true, nil
}

// closeListen detaches a listen stream from its worker, which also unsubscribes what it
// subscribed (as a session's end does), and gives back its user's slot.
func (a *Adapter) closeListen(c *listenCaller) {
	if c.member != nil {
		c.member.Detach()
	}
	if c.owner != nil {
		a.listens.release(*c.owner)
	}
}

// end writes the listen request's result: the stream's graceful end.
func (c *listenCaller) end() {
	res, _ := json.Marshal(map[string]any{"_meta": map[string]json.RawMessage{MetaSubscriptionID: c.subID}, "resultType": "complete"})
	_ = c.stream.Event((&jsonrpc.Message{ID: c.subID, Result: res}).Encode())
}

// waitListen passes the worker's notifications to the stream until done (the request's
// context) or end (the token's expiry) is closed, the stream is lost, the worker lets go or
// the gateway stops. A keepalive comment goes between them, as on a GET stream: a proxy's
// idle timeout would otherwise end a stream that had nothing to say.
//
//go:noinline
func (a *Adapter) waitListen(c *listenCaller, done, end <-chan struct{}) {
	tick := time.NewTicker(a.Keepalive) // unreferenced, it is collected
	for {
		select {
		case <-c.events.Ready():
			for _, ev := range c.events.Take() {
				a.Steps.Outbound(ev)
				if c.stream.Event(ev) != nil {
					return
				}
			}
		case <-tick.C:
			if c.stream.Comment("keepalive") != nil {
				return
			}
		case <-done:
			return
		case <-end:
			return
		case <-a.Stopping:
			c.end()
			return
		case <-c.detached:
			c.end()
			return
		}
	}
}

// listenSubscribe subscribes this listen stream to uri at the worker, once the policy allowed
// it as it would a resources/subscribe of uri (Steps.Gate). The pool counts subscriptions per
// caller, so the worker hears one subscribe per URI however many listen.
func (a *Adapter) listenSubscribe(ctx context.Context, m *pool.Member, q *request, uri string) *wire.Error {
	msg := q.msg
	params, _ := json.Marshal(map[string]string{"uri": uri})
	sub := &jsonrpc.Message{ID: msg.ID, Method: "resources/subscribe", Params: params}
	if he := a.Steps.Gate(ctx, m, func() *slog.Logger { return a.requestLog(ctx, q.p, m.WorkerID()) }, sub, q.access); he != nil {
		return he
	}
	ctx, cancel := context.WithTimeout(ctx, listenSubscribeTimeout)
	defer cancel()
	req := &jsonrpc.Message{ID: json.RawMessage(`"gemgate-listen"`), Method: "resources/subscribe", Params: params}
	call, err := m.Call(ctx, pool.Request{Message: req, Identity: q.id})
	if err != nil {
		return a.Steps.CallError(msg.ID, err)
	}
	select {
	case resp := <-call.Result():
		if resp.Error != nil {
			return &wire.Error{Status: http.StatusOK, Code: jsonrpc.CodeInvalidParams, ID: msg.ID,
				Message: "the worker refused the subscription to " + textclip.Quote(uri)}
		}
		return nil
	case <-ctx.Done():
		call.Cancel("gemgate stopped waiting for resources/subscribe")
		return wire.Overloaded(msg.ID, "the worker did not answer in time", a.WorkerRetryAfter, nil)
	}
}
