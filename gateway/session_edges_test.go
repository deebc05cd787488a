package gateway

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gemgate/gemgate/auth"
	"github.com/gemgate/gemgate/pool"
)

// Last-Event-ID values that are not an id gemgate wrote,
// spelled around a real one, are all 400 with data.kind last_event_id, and the session and
// its stream go on. (Signs, unicode digits, overflow, empty parts, an extra separator, the
// tag in upper case, over the length bound.)
func TestLastEventIDOddSpellings(t *testing.T) {
	f := newFixture(t)
	a := f.client("alice-rw")
	a.open()
	r := a.callTool("1", "echo", map[string]any{"text": "x"})
	var id string
	for ev := range readEvents(strings.NewReader(string(r.body))) {
		if ev.id != "" {
			id = ev.id
		}
	}
	parts := strings.Split(id, "_")
	if len(parts) != 3 {
		t.Fatalf("event id %q is not tag_stream_seq", id)
	}
	tag, sid, seq := parts[0], parts[1], parts[2]
	odd := []string{
		tag + "_+" + sid + "_" + seq,
		tag + "_" + sid + "_+" + seq,
		tag + "_-" + sid + "_" + seq,
		tag + "_" + sid + "_-1",
		tag + "_" + sid + "_١", // ARABIC-INDIC DIGIT ONE
		tag + "_" + sid + "_１", // FULLWIDTH DIGIT ONE
		tag + "_" + sid + "_18446744073709551616",
		tag + "_" + sid + "_18446744073709551615",
		tag + "_18446744073709551615_0",
		tag + "_" + sid + "_",
		tag + "__" + seq,
		"_" + sid + "_" + seq,
		tag + "_" + sid + "_" + seq + "_",
		tag + "_" + sid + "_" + seq + "_" + seq,
		tag + "_" + sid + "_1e0",
		tag + "_" + sid + "_0x1",
		tag + "_" + sid + "_1_0",
		tag + "_" + sid + "_" + strings.Repeat("0", 64) + seq,
		tag + "\u00a0_" + sid + "_" + seq,
		tag + "_" + sid + " _" + seq,
	}
	if upper := strings.ToUpper(tag); upper != tag { // a tag of digits alone has no upper case
		odd = append(odd, upper+"_"+sid+"_"+seq)
	}
	for _, last := range odd {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		req, err := a.newRequest(ctx, http.MethodGet, nil, "Accept", "text/event-stream", "Last-Event-ID", last)
		if err != nil {
			cancel()
			t.Fatal(err)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			cancel()
			t.Fatalf("%q: %v", last, err)
		}
		var body struct {
			Error struct {
				Data struct{ Kind string } `json:"data"`
			} `json:"error"`
		}
		_ = json.NewDecoder(resp.Body).Decode(&body)
		resp.Body.Close()
		cancel()
		if resp.StatusCode != http.StatusBadRequest || body.Error.Data.Kind != "last_event_id" {
			t.Errorf("Last-Event-ID %q: status %d kind %q, want 400 last_event_id", last, resp.StatusCode, body.Error.Data.Kind)
		}
	}
	if r := a.callTool("2", "echo", map[string]any{"text": "still"}); r.status != http.StatusOK || toolText(t, r.only(t)) != "still" {
		t.Errorf("the session after odd resumptions: %d %s", r.status, r.body)
	}
}

// A session with calls in flight (some of them
// still on their way to the worker) is DELETEd, many times at once; every call gets exactly
// one answer carrying its own id (the session's end, or 404), none hangs, and the session is
// gone for every later request.
func TestDeleteRacingCallsAnswersEveryCall(t *testing.T) {
	for _, per := range []string{pool.PerSession, pool.PerUser} {
		t.Run(per, func(t *testing.T) {
			f := newFixture(t, func(o *Options) { o.Pool = pool.Settings{WorkerPer: per} })
			c := f.client("alice-rw")
			c.open()
			const calls = 12
			var wg sync.WaitGroup
			errs := make(chan error, calls+8)
			for i := range calls {
				wg.Add(1)
				go func() {
					defer wg.Done()
					ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
					defer cancel()
					id := fmt.Sprintf(`"c%d"`, i)
					r, err := c.do(ctx, http.MethodPost, rpcBody(id, "tools/call", slowParams(2, true, "t"+id[1:len(id)-1])))
					if err != nil {
						errs <- fmt.Errorf("call %s: %w", id, err)
						return
					}
					if r.status == http.StatusNotFound {
						return
					}
					var answers int
					for _, m := range r.msgs {
						if m.IsResponse() {
							answers++
							if string(m.ID) != id {
								errs <- fmt.Errorf("call %s answered with id %s", id, m.ID)
							}
						}
					}
					if answers != 1 {
						errs <- fmt.Errorf("call %s: %d answers (status %d): %s", id, answers, r.status, r.body)
					}
				}()
			}
			time.Sleep(300 * time.Millisecond)
			var deletes sync.WaitGroup
			codes := make(chan int, 8)
			for range 8 {
				deletes.Add(1)
				go func() {
					defer deletes.Done()
					r, err := c.do(context.Background(), http.MethodDelete, "")
					if err != nil {
						errs <- err
						return
					}
					codes <- r.status
				}()
			}
			deletes.Wait()
			close(codes)
			ok := 0
			for code := range codes {
				switch code {
				case http.StatusOK:
					ok++
				case http.StatusNotFound:
				default:
					t.Errorf("DELETE racing DELETE: %d", code)
				}
			}
			if ok != 1 {
				t.Errorf("%d DELETEs answered 200, want exactly 1", ok)
			}
			wg.Wait()
			close(errs)
			for err := range errs {
				t.Error(err)
			}
			if r := c.rpc("99", "ping", map[string]any{}); r.status != http.StatusNotFound {
				t.Errorf("POST after DELETE: %d, want 404", r.status)
			}
		})
	}
}

// lookalikeTokens adds tokens of subjects that differ from alice's ("sub-alice") only by
// case, white space, a zero-width character, a homoglyph or Unicode normalization, each its
// own user claim spelled likewise.
type lookalikeTokens struct{ testTokens }

var lookalikeSubjects = map[string]string{
	"upper":    "SUB-ALICE",
	"title":    "Sub-Alice",
	"trailing": "sub-alice ",
	"zwsp":     "sub-alice\u200b",
	"cyrillic": "sub-ali\u0441e",
	"nfd":      "sub-alice\u0301", // a combining acute after e: é in NFD, a different string from NFC
}

func (l lookalikeTokens) Verify(ctx context.Context, raw string) (auth.Principal, error) {
	if sub, ok := lookalikeSubjects[raw]; ok {
		return auth.Principal{Issuer: testIssuer, Subject: sub, User: strings.Replace(sub, "sub-", "", 1), Scopes: []string{"mcp:use", "mcp:write"}}, nil
	}
	return l.testTokens.Verify(ctx, raw)
}

// A session belongs to (issuer, subject) compared
// byte for byte. A subject that differs from the owner's by case, white space, a zero-width
// character, a homoglyph or normalization is another user: 404 on POST, GET and DELETE of
// the owner's session, and a per-user worker of its own.
func TestLookalikeSubjectsAreOtherUsers(t *testing.T) {
	f := newFixture(t, func(o *Options) {
		authn := auth.NewAuthenticator(auth.AuthenticatorOptions{
			Verifier: lookalikeTokens{tokens}, ResourceMetadataURL: resourceMetadata, RequiredScopes: o.Policy.RequiredScopes(),
		})
		o.Authenticate, o.InsufficientScope = authn.Middleware, authn.InsufficientScope
		o.Pool = pool.Settings{WorkerPer: pool.PerUser}
	})
	alice := f.client("alice-rw")
	alice.open()
	alicePid := alice.sessionObj().member.WorkerPid()
	for name := range lookalikeSubjects {
		t.Run(name, func(t *testing.T) {
			m := &client{f: f, token: name, session: alice.session, version: alice.version}
			for _, method := range []string{http.MethodPost, http.MethodGet, http.MethodDelete} {
				body := ""
				if method == http.MethodPost {
					body = rpcBody("9", "tools/call", map[string]any{"name": "whoami", "arguments": map[string]any{}})
				}
				ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
				r, err := m.do(ctx, method, body)
				cancel()
				if err != nil {
					t.Fatal(err)
				}
				if r.status != http.StatusNotFound {
					t.Errorf("%s on alice's session: %d, want 404", method, r.status)
				}
			}
			own := f.client(name)
			own.open()
			if pid := f.gw.sessions.Lookup(own.session, owner{testIssuer, lookalikeSubjects[name]}).member.WorkerPid(); pid == alicePid {
				t.Errorf("subject %q shares alice's worker %d", lookalikeSubjects[name], pid)
			}
			own.request(context.Background(), http.MethodDelete, "")
		})
	}
	if r := alice.callTool("10", "whoami", map[string]any{}); r.status != http.StatusOK || !strings.Contains(toolText(t, r.only(t)), "user=alice ") {
		t.Errorf("alice after the lookalikes: %d %s", r.status, r.body)
	}
}
