package sessionless

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/gemgate/gemgate/gateway/wire"
	"github.com/gemgate/gemgate/jsonrpc"
	"github.com/gemgate/gemgate/pool"
)

// subscriptions/listen's resourceSubscriptions are URIs gemgate subscribes the worker to, so
// they are read as every string gemgate decides on (Object.String): one with a lone UTF-16
// surrogate escape is refused, as resources/subscribe refuses it. encoding/json alone reads
// "res://a\ud800" and "res://a\udc00" both as "res://a\uFFFD", a third URI that neither the
// client nor a JavaScript or Python worker named.
func TestListenResourceSubscriptionWithLoneSurrogateIsRefused(t *testing.T) {
	for _, uri := range []string{`res://a\ud800`, `res://a\udc00`} {
		msg, err := jsonrpc.Parse([]byte(`{"jsonrpc":"2.0","id":1,"method":"subscriptions/listen","params":{"notifications":{"resourceSubscriptions":["`+uri+`"]}}}`), jsonrpc.Options{Client: true})
		if err != nil {
			t.Fatal(err)
		}
		f, err := readListenFilter(msg)
		if err == nil {
			t.Errorf("resourceSubscriptions [%q] read as %q; want refused (lone surrogate escape), as resources/subscribe refuses it", uri, f.ResourceSubscriptions)
		}
	}
}

// A listen stream is agreed only what the worker's InitializeResult declares as the client
// reads that result (server/discover passes it on through encoding/json, last member wins): a
// capability given twice, an object and then null, is not declared, and no list_changed or
// resources/subscribe is agreed on it.
func TestListenAgreedReadsARepeatedCapabilityAsItsLast(t *testing.T) {
	want := listenFilter{ToolsListChanged: true, PromptsListChanged: true, ResourcesListChanged: true,
		ResourceSubscriptions: []string{"res://a"}}
	for _, init := range []string{
		`{"capabilities":{"tools":{"listChanged":true},"tools":null}}`,
		`{"capabilities":{"prompts":{"listChanged":true},"prompts":null}}`,
		`{"capabilities":{"resources":{"listChanged":true,"subscribe":true},"resources":null}}`,
	} {
		got := want.agreed([]byte(init))
		if got.ToolsListChanged || got.PromptsListChanged || got.ResourcesListChanged || got.ResourceSubscriptions != nil {
			t.Errorf("%s: agreed %+v, want nothing", init, got)
		}
	}
	// The last member, an object, declares it.
	got := want.agreed([]byte(`{"capabilities":{"tools":null,"tools":{"listChanged":true}}}`))
	if !got.ToolsListChanged {
		t.Errorf("tools declared last: agreed %+v, want toolsListChanged", got)
	}
}

// A listen stream whose client does not read holds what the worker sends it until the client
// catches up: its queue is bounded in bytes, as every other queue of worker messages is (a
// session's outbox 16 MiB, a call's events 1 MiB beyond the first), not only in messages, or
// a worker's 16 MiB notifications would make gemgate hold 64 of them per stream.
func TestListenStreamHoldsBoundedBytes(t *testing.T) {
	c := &listenCaller{subID: []byte(`"s1"`), events: wire.NewEventQueue()}
	c.filter.Store(&listenFilter{ToolsListChanged: true})
	const size = 256 << 10
	big := `{"jsonrpc":"2.0","method":"notifications/tools/list_changed","params":{"_meta":{"pad":"` + strings.Repeat("x", size) + `"}}}`
	for range eventBuffer {
		c.Deliver(pool.Delivery{Message: []byte(big)})
	}
	held := 0
	for _, ev := range c.events.Take() {
		held += len(ev)
	}
	if held == 0 || held > 1<<20+size+1024 {
		t.Errorf("a listen stream whose client does not read holds %d KiB of the worker's notifications; want some, and at most 1 MiB beyond the first", held>>10)
	}
}

// TestReadListenFilter: subscriptions/listen's notifications are read strictly: the flags as
// booleans, the subscriptions as an array of strings (null: none), a key in another case
// refused; the stream gets the notifications asked for and no others.
func TestReadListenFilter(t *testing.T) {
	read := func(n string) (listenFilter, error) {
		t.Helper()
		msg, err := jsonrpc.Parse([]byte(`{"jsonrpc":"2.0","id":1,"method":"subscriptions/listen","params":{"notifications":`+n+`}}`), jsonrpc.Options{Client: true})
		if err != nil {
			t.Fatal(err)
		}
		return readListenFilter(msg)
	}
	f, err := read(`{"toolsListChanged":true,"promptsListChanged":false,"resourcesListChanged":true,"resourceSubscriptions":["res://a","res://b"]}`)
	if err != nil || !f.ToolsListChanged || f.PromptsListChanged || !f.ResourcesListChanged || strings.Join(f.ResourceSubscriptions, " ") != "res://a res://b" {
		t.Errorf("filter %+v, %v", f, err)
	}
	for method, want := range map[string]bool{
		"notifications/tools/list_changed": true, "notifications/prompts/list_changed": false,
		"notifications/resources/list_changed": true, "notifications/resources/updated": true, "notifications/message": false,
	} {
		if f.wants(method) != want {
			t.Errorf("%s passes: %v, want %v", method, !want, want)
		}
	}
	if f, err := read(`{"promptsListChanged":true,"resourceSubscriptions":null}`); err != nil || !f.PromptsListChanged || f.ToolsListChanged || f.ResourceSubscriptions != nil ||
		f.wants("notifications/resources/updated") || f.empty() {
		t.Errorf("prompts only: %+v, %v", f, err)
	}
	if f, err := read(`{}`); err != nil || !f.empty() {
		t.Errorf("nothing asked: %+v, %v; want an empty filter", f, err)
	}
	for _, bad := range []string{
		`{"toolsListChanged":"yes"}`, `{"promptsListChanged":1}`,
		`{"resourceSubscriptions":"res://a"}`, `{"resourceSubscriptions":[1]}`, `{"ToolsListChanged":true}`, `[]`,
	} {
		if f, err := read(bad); err == nil {
			t.Errorf("%s read as %+v, want refused", bad, f)
		}
	}
}

// TestListenTagsEveryNotification: each notification a listen stream passes on names its
// subscription in params._meta, whether the worker sent no params (list_changed usually has
// none), null, or params with a _meta of their own (kept).
func TestListenTagsEveryNotification(t *testing.T) {
	for _, in := range []string{
		`{"jsonrpc":"2.0","method":"notifications/tools/list_changed"}`,
		`{"jsonrpc":"2.0","method":"notifications/tools/list_changed","params":null}`,
		`{"jsonrpc":"2.0","method":"notifications/tools/list_changed","params":{"_meta":{"x":1},"y":2}}`,
	} {
		c := &listenCaller{subID: []byte(`"s1"`), events: wire.NewEventQueue()}
		c.filter.Store(&listenFilter{ToolsListChanged: true})
		c.Deliver(pool.Delivery{Message: []byte(in)})
		evs := c.events.Take()
		if len(evs) != 1 {
			t.Errorf("%s: %d events passed on, want 1", in, len(evs))
			continue
		}
		var got struct {
			Method string `json:"method"`
			Params struct {
				Meta map[string]json.RawMessage `json:"_meta"`
				Y    json.RawMessage            `json:"y"`
			} `json:"params"`
		}
		if err := json.Unmarshal(evs[0], &got); err != nil {
			t.Fatalf("%s: passed on as %s: %v", in, evs[0], err)
		}
		if got.Method != "notifications/tools/list_changed" || string(got.Params.Meta[MetaSubscriptionID]) != `"s1"` {
			t.Errorf("%s: passed on as %s, want it tagged with subscription s1", in, evs[0])
		}
		if strings.Contains(in, `"y"`) && (string(got.Params.Meta["x"]) != "1" || string(got.Params.Y) != "2") {
			t.Errorf("%s: the worker's params changed: %s", in, evs[0])
		}
	}
}

// TestListenCounterBound: a user holds at most MaxListensPerUser (16) listen streams at once;
// another user is not held by them; a stream that ends gives back one place, and no more.
func TestListenCounterBound(t *testing.T) {
	var c listenCounter
	alice, bob := owner{"iss", "alice"}, owner{"iss", "bob"}
	for i := range 16 {
		if !c.take(alice) {
			t.Fatalf("listen stream %d of 16 refused", i+1)
		}
	}
	if c.take(alice) {
		t.Fatal("a 17th listen stream was allowed")
	}
	if !c.take(bob) {
		t.Error("bob is refused for alice's streams")
	}
	c.release(alice)
	if !c.take(alice) {
		t.Error("a stream that ended gave back no place")
	}
	if c.take(alice) {
		t.Error("a stream that ended gave back more than one place")
	}
	for range 16 {
		c.release(alice)
	}
	for i := range 16 {
		if !c.take(alice) {
			t.Fatalf("after every stream ended, stream %d of 16 refused", i+1)
		}
	}
}
