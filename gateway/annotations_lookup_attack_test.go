package gateway

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gemgate/gemgate/gateway/sessionless"
	"github.com/gemgate/gemgate/policy"
	"github.com/gemgate/gemgate/pool"
)

// The worker mode brokenlist (GEMGATE_TEST_WORKER=brokenlist) is a legacy worker with two
// tools: write, annotated openWorldHint: false, and trip, openWorldHint: true. Once trip is
// called, every tools/list is answered with an error, as a worker whose backend for its list
// went away does; its tools still run.
//
// The worker mode relistrace (GEMGATE_TEST_WORKER=relistrace) is a legacy worker whose first
// tools/list annotates its tool flip readOnlyHint: true, among many tools without annotations,
// and which takes the hint back at once: notifications/tools/list_changed follows that answer,
// and every later list names flip without annotations.
//
// The worker mode crashlist (GEMGATE_TEST_WORKER=crashlist) is a legacy worker whose tools are
// peek (readOnlyHint: true), crash (readOnlyHint: true: it exits at once, unanswered) and write
// (openWorldHint: false).
//
// The worker mode pagedtwice (GEMGATE_TEST_WORKER=pagedtwice) is a legacy worker whose
// tools/list comes in two pages, each listing its tool flip: the first annotated
// readOnlyHint: true, the second without annotations.
//
// The worker mode slowlist (GEMGATE_TEST_WORKER=slowlist) is a legacy worker whose tools/list
// takes a second to answer; its tool peek is annotated openWorldHint: true.
func init() {
	switch os.Getenv("GEMGATE_TEST_WORKER") {
	case "brokenlist":
		os.Exit(playBrokenList())
	case "relistrace":
		os.Exit(playRelistRace())
	case "crashlist":
		os.Exit(playCrashList())
	case "pagedtwice":
		os.Exit(playPagedTwice())
	case "slowlist":
		os.Exit(playSlowList())
	}
}

func playBrokenList() int {
	broken := false
	w := &scripted{name: "brokenlist", caps: `{"tools":{}}`}
	w.handle = func(w *scripted, m *scriptedMsg) bool {
		switch m.Method {
		case "tools/list":
			if broken {
				w.out(`{"jsonrpc":"2.0","id":%s,"error":{"code":-32603,"message":"the tool registry is unavailable"}}`, m.ID)
				return true
			}
			w.out(`{"jsonrpc":"2.0","id":%s,"result":{"tools":[`+
				`{"name":"write","inputSchema":{"type":"object"},"annotations":{"openWorldHint":false}},`+
				`{"name":"trip","inputSchema":{"type":"object"},"annotations":{"openWorldHint":true}}]}}`, m.ID)
		case "tools/call":
			if m.Params.Name == "trip" {
				broken = true
			}
			w.text(m.ID, "ran "+m.Params.Name)
		default:
			return false
		}
		return true
	}
	return w.run()
}

func playCrashList() int {
	w := &scripted{name: "crashlist", caps: `{"tools":{}}`}
	w.handle = func(w *scripted, m *scriptedMsg) bool {
		switch m.Method {
		case "tools/list":
			w.out(`{"jsonrpc":"2.0","id":%s,"result":{"tools":[`+
				`{"name":"peek","inputSchema":{"type":"object"},"annotations":{"readOnlyHint":true}},`+
				`{"name":"crash","inputSchema":{"type":"object"},"annotations":{"readOnlyHint":true}},`+
				`{"name":"write","inputSchema":{"type":"object"},"annotations":{"openWorldHint":false}}]}}`, m.ID)
		case "tools/call":
			if m.Params.Name == "crash" {
				os.Exit(3)
			}
			w.text(m.ID, "ran "+m.Params.Name)
		default:
			return false
		}
		return true
	}
	return w.run()
}

func playPagedTwice() int {
	w := &scripted{name: "pagedtwice", caps: `{"tools":{}}`}
	w.handle = func(w *scripted, m *scriptedMsg) bool {
		switch {
		case m.Method == "tools/list" && m.Params.Cursor == "":
			w.out(`{"jsonrpc":"2.0","id":%s,"result":{"tools":[{"name":"flip","inputSchema":{"type":"object"},"annotations":{"readOnlyHint":true}}],"nextCursor":"p2"}}`, m.ID)
		case m.Method == "tools/list":
			w.out(`{"jsonrpc":"2.0","id":%s,"result":{"tools":[{"name":"flip","inputSchema":{"type":"object"}}]}}`, m.ID)
		case m.Method == "tools/call":
			w.text(m.ID, "flipped")
		default:
			return false
		}
		return true
	}
	return w.run()
}

func playSlowList() int {
	w := &scripted{name: "slowlist", caps: `{"tools":{}}`}
	w.handle = func(w *scripted, m *scriptedMsg) bool {
		switch m.Method {
		case "tools/list":
			time.Sleep(time.Second)
			w.out(`{"jsonrpc":"2.0","id":%s,"result":{"tools":[{"name":"peek","inputSchema":{"type":"object"},"annotations":{"openWorldHint":true}}]}}`, m.ID)
		case "tools/call":
			w.text(m.ID, "ran "+m.Params.Name)
		default:
			return false
		}
		return true
	}
	return w.run()
}

func playRelistRace() int {
	lists := 0
	var pad strings.Builder
	for i := range 2000 {
		fmt.Fprintf(&pad, `,{"name":"pad%d","inputSchema":{"type":"object"}}`, i)
	}
	w := &scripted{name: "relistrace", caps: `{"tools":{"listChanged":true}}`}
	w.handle = func(w *scripted, m *scriptedMsg) bool {
		switch m.Method {
		case "tools/list":
			lists++
			annotations := ""
			if lists == 1 {
				annotations = `,"annotations":{"readOnlyHint":true}`
			}
			out := fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"result":{"tools":[{"name":"flip","inputSchema":{"type":"object"}%s}%s]}}`+"\n",
				m.ID, annotations, pad.String())
			if lists == 1 { // the answer and the change in one write: the change comes right after it
				out += `{"jsonrpc":"2.0","method":"notifications/tools/list_changed"}` + "\n"
			}
			fmt.Print(out)
		case "tools/call":
			w.text(m.ID, "flipped")
		default:
			return false
		}
		return true
	}
	return w.run()
}

// A tool rule that reads annotations decides on the worker's annotations; when gemgate cannot
// read them (the worker's tools/list fails), the call is not let through on MCP's defaults:
// the lookup fails closed, in either era. Here write (openWorldHint: false) is refused to a
// token outside staff while the worker's list answers, and must stay refused once it fails.
func TestAnnotationRuleLookupFailsClosed(t *testing.T) {
	pol := closedWorldForStaff(t, nil)
	newF := func(t *testing.T) *fixture {
		return newFixture(t, func(o *Options) {
			o.Policy = pol
			o.Pool = pool.Settings{WorkerPer: pool.PerUser}
			o.Workers = &testLauncher{mode: "brokenlist", dataDir: t.TempDir()}
		})
	}
	ran := func(r reply) bool {
		m := r.only(t)
		return m.Error == nil && strings.Contains(string(m.Result), "ran write")
	}
	t.Run("2025-06-18 session, tools not listed", func(t *testing.T) {
		c := newF(t).client("alice-rw")
		c.open()
		if r := c.callTool("2", "write", map[string]any{}); ran(r) {
			t.Fatalf("write ran while the worker's list said openWorldHint false: %s", r.body)
		}
		if r := c.callTool("3", "trip", map[string]any{}); !strings.Contains(string(r.body), "ran trip") {
			t.Fatalf("trip: %d %s", r.status, r.body)
		}
		if r := c.callTool("4", "write", map[string]any{}); ran(r) {
			t.Errorf("write ran on MCP's defaults once the worker's tools/list failed: %d %s", r.status, r.body)
		}
	})
	t.Run("2026-07-28", func(t *testing.T) {
		c := newF(t).client("alice-rw")
		call := func(id, name string) reply {
			return c.sessionless(id, "tools/call", map[string]any{"name": name, "arguments": map[string]any{}})
		}
		if r := call("2", "write"); ran(r) {
			t.Fatalf("write ran while the worker's list said openWorldHint false: %s", r.body)
		}
		if r := call("3", "trip"); !strings.Contains(string(r.body), "ran trip") {
			t.Fatalf("trip: %d %s", r.status, r.body)
		}
		if r := call("4", "write"); ran(r) {
			t.Errorf("write ran on MCP's defaults once the worker's tools/list failed: %d %s", r.status, r.body)
		}
	})
}

// A tools/list answer the worker's notifications/tools/list_changed followed is out of date
// when the session has it: the gate keeps no readOnlyHint from it, even when the request's
// goroutine reads the answer only after the change was delivered.
func TestReadOnlyHintOfAListAnswerTheChangeFollowed(t *testing.T) {
	pol, err := policy.New(policy.Config{TrustReadOnlyHints: true})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 5 {
		f := newFixture(t, func(o *Options) {
			o.Policy = pol
			o.Workers = &testLauncher{mode: "relistrace", dataDir: t.TempDir()}
		})
		c := f.client("alice-ro")
		c.open()
		if got := listedTools(t, c.rpc("2", "tools/list", map[string]any{})); !slices.Equal(got, []string{"flip"}) {
			t.Fatalf("tools/list: %v, want flip (hinted read-only)", got)
		}
		r := c.callTool("3", "flip", map[string]any{})
		if r.status != http.StatusForbidden {
			t.Fatalf("round %d: flip, whose readOnlyHint the worker's list_changed took back, ran for a read-only token: %d %s", i, r.status, r.body)
		}
		forbiddenBody(t, r, "3", "readOnly")
	}
}

// A session outlives its worker's death (worker_per: user, on_worker_exit: keep), and its
// next request starts a fresh worker. The tool gate's lookup of the worker's list is such a
// request: a tool whose annotations decide is looked up in the fresh worker's list, not
// refused because no worker ran when the lookup began. Here peek, vouched read-only by its
// readOnlyHint and allowed by the rule (open world), runs for a read-only and a read-write
// token after crash took the worker down, the tools never listed; write stays refused.
func TestToolLookupAfterTheWorkerDied(t *testing.T) {
	pol := closedWorldForStaff(t, nil)
	for _, token := range []string{"alice-ro", "alice-rw"} {
		t.Run(token, func(t *testing.T) {
			f := newFixture(t, func(o *Options) {
				o.Policy = pol
				o.Pool = pool.Settings{WorkerPer: pool.PerUser}
				o.Workers = &testLauncher{mode: "crashlist", dataDir: t.TempDir()}
			})
			c := f.client(token)
			c.open()
			pid := c.sessionObj().member.WorkerPid()
			if r := c.callTool("2", "crash", map[string]any{}); r.only(t).Error == nil {
				t.Fatalf("crash answered: %s", r.body)
			}
			eventually(t, 5*time.Second, "the worker to end", func() bool { return !alive(pid) && c.sessionObj().member.WorkerPid() == 0 })
			if r := c.callTool("3", "peek", map[string]any{}); !strings.Contains(string(r.body), "ran peek") {
				t.Errorf("peek after the worker died: %d %s", r.status, r.body)
			}
			if r := c.callTool("4", "write", map[string]any{}); strings.Contains(string(r.body), "ran write") {
				t.Errorf("write ran for a token outside staff: %s", r.body)
			}
		})
	}
}

// A tool the worker lists twice, once annotated readOnlyHint: true and once without
// annotations, is read the cautious way (policy: read-only only if every listing says so),
// whether the two listings share a page or not: the gate's lookup of a paged list does not
// stop at the first page that names the tool. Here flip is refused to a read-only token in
// both eras when the client did not list the tools, as it is when the client lists both pages.
func TestToolListedTwiceAcrossPagesIsReadCautiously(t *testing.T) {
	pol, err := policy.New(policy.Config{TrustReadOnlyHints: true})
	if err != nil {
		t.Fatal(err)
	}
	f := newFixture(t, func(o *Options) {
		o.Policy = pol
		o.Pool = pool.Settings{WorkerPer: pool.PerUser}
		o.Workers = &testLauncher{mode: "pagedtwice", dataDir: t.TempDir()}
	})
	listed := f.client("alice-ro")
	listed.open()
	listed.rpc("2", "tools/list", map[string]any{})
	if got := listedTools(t, listed.rpc("3", "tools/list", map[string]any{"cursor": "p2"})); len(got) != 0 {
		t.Fatalf("second page: %v, want flip hidden", got)
	}
	if r := listed.callTool("4", "flip", map[string]any{}); r.status != http.StatusForbidden {
		t.Errorf("2025-06-18 session, both pages listed: flip %d %s, want 403", r.status, r.body)
	}
	unlisted := f.client("alice-ro")
	unlisted.open()
	if r := unlisted.callTool("2", "flip", map[string]any{}); r.status != http.StatusForbidden {
		t.Errorf("2025-06-18 session, tools not listed: flip %d %s, want 403", r.status, r.body)
	}
	if r := f.client("alice-ro").sessionless("5", "tools/call", map[string]any{"name": "flip", "arguments": map[string]any{}}); r.status != http.StatusForbidden {
		t.Errorf("2026-07-28: flip %d %s, want 403", r.status, r.body)
	}
}

// A client that goes away while the gate looks its tool up in the worker's list (a rule reads
// annotations) gets its call audited as disconnected, in either era, as one whose client went
// away before its worker was had: not refused with "the worker is gone", nor an error.
func TestClientGoneDuringTheToolLookupIsAuditedDisconnected(t *testing.T) {
	pol := closedWorldForStaff(t, nil)
	for _, era := range []string{"2025-06-18", "2026-07-28"} {
		t.Run(era, func(t *testing.T) {
			f := newFixture(t, func(o *Options) {
				o.Policy = pol
				o.Pool = pool.Settings{WorkerPer: pool.PerUser}
				o.Workers = &testLauncher{mode: "slowlist", dataDir: t.TempDir()}
			})
			c := f.client("alice-rw")
			params := map[string]any{"name": "peek", "arguments": map[string]any{}}
			var body string
			var header []string
			if era == "2025-06-18" {
				c.open()
				b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": params})
				body, header = string(b), []string{headerSessionID, c.session, sessionless.HeaderProtocolVersion, c.version}
			} else {
				params["_meta"] = sessionlessMeta()
				b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": params})
				body, header = string(b), []string{sessionless.HeaderProtocolVersion, sessionless.Version,
					sessionless.HeaderMethod, "tools/call", sessionless.HeaderName, "peek"}
			}
			ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
			defer cancel()
			if _, err := c.do(ctx, http.MethodPost, body, header...); err == nil {
				t.Fatal("the call was answered before the client went away")
			}
			var vals []map[string]any
			eventually(t, 5*time.Second, "the call's audit line", func() bool {
				_, vals = auditLines(t, f)
				return len(vals) > 0
			})
			if len(vals) != 1 || vals[0]["outcome"] != "disconnected" {
				t.Errorf("audit lines %v, want one, outcome disconnected", vals)
			}
			if strings.Contains(f.log.String(), "the worker is gone") {
				t.Errorf("the log blames the worker for the client's leaving:\n%s", f.log.String())
			}
		})
	}
}

// A session learns a tool's annotations from every page of its worker's list it reads, merged
// the cautious way as the gate's lookup merges them, whatever order the client reads the pages
// in: the client, not the worker, picks the order, and listing the page that vouches a tool
// read-only last must not let a read-only token call a tool another page lists without the
// hint.
func TestSessionListingPagesInAnyOrderReadsCautiously(t *testing.T) {
	pol, err := policy.New(policy.Config{TrustReadOnlyHints: true})
	if err != nil {
		t.Fatal(err)
	}
	f := newFixture(t, func(o *Options) {
		o.Policy = pol
		o.Pool = pool.Settings{WorkerPer: pool.PerUser}
		o.Workers = &testLauncher{mode: "pagedtwice", dataDir: t.TempDir()}
	})
	c := f.client("alice-ro")
	c.open()
	c.rpc("2", "tools/list", map[string]any{"cursor": "p2"})
	c.rpc("3", "tools/list", map[string]any{})
	if r := c.callTool("4", "flip", map[string]any{}); r.status != http.StatusForbidden {
		t.Errorf("second page listed, then the first: flip %d %s, want 403", r.status, r.body)
	}
}

// closedWorldForStaff is a policy that trusts readOnlyHint (and vouches readOnly's tools) and
// keeps closed-world tools (openWorldHint: false) for the staff group: a rule that reads
// annotations.
func closedWorldForStaff(t *testing.T, readOnly []string) *policy.Policy {
	t.Helper()
	pol, err := policy.New(policy.Config{
		ReadOnlyTools:      readOnly,
		TrustReadOnlyHints: true,
		Rules:              []policy.Rule{{Name: "closed-world-for-staff", Allow: `annotations.openWorldHint || "staff" in groups`}},
	})
	if err != nil {
		t.Fatal(err)
	}
	return pol
}
