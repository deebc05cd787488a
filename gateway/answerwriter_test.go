package gateway

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strconv"
	"testing"

	"github.com/gemgate/gemgate/gateway/wire"
	"github.com/gemgate/gemgate/jsonrpc"
)

// One answer writer for both eras: a 2025-x session's stream is resumable (a priming event,
// an id on every event, each logged for replay); a 2026-07-28 request's has neither, and its
// bytes are the events alone, framed as every SSE event is.
func TestAnswerWriterFramesBothEras(t *testing.T) {
	progress := []byte(`{"jsonrpc":"2.0","method":"notifications/progress","params":{"progress":1}}`)
	answer := &jsonrpc.Message{ID: json.RawMessage(`7`), Result: json.RawMessage(`{"content":[]}`)}
	g := &Gateway{}

	rec := httptest.NewRecorder()
	aw := g.newAnswerWriter(rec, "", nil, true)
	if !aw.event(progress) {
		t.Fatal("the sessionless stream did not take the progress event")
	}
	aw.answer(answer, false, http.StatusOK)
	want := string(wire.AppendEvent(nil, "", progress)) + string(wire.AppendEvent(nil, "", answer.Encode()))
	if got := rec.Body.String(); got != want {
		t.Errorf("sessionless stream:\n%q\nwant\n%q", got, want)
	}
	if aw.primed {
		t.Error("a sessionless stream counts as resumable")
	}

	store := wire.NewEventStore()
	rec = httptest.NewRecorder()
	aw = g.newAnswerWriter(rec, "session", store, true)
	aw.prime = true // a 2025-11-25 session's
	aw.event(progress)
	aw.answer(answer, false, http.StatusOK)
	want = string(wire.AppendPrime(nil, store.ID(1, 0), wire.SSERetry)) +
		string(wire.AppendEvent(nil, store.ID(1, 1), progress)) + string(wire.AppendEvent(nil, store.ID(1, 2), answer.Encode()))
	if got := rec.Body.String(); got != want {
		t.Errorf("session stream:\n%q\nwant\n%q", got, want)
	}
	if evs, done, _, ok := store.Since(1, 0); !ok || !done || len(evs) != 2 || !aw.primed {
		t.Errorf("session stream: %d events logged, done %v, resumable %v; want both, done", len(evs), done, aw.primed)
	}
}

// An answer alone goes as a stream of one event, with its length, when asked to and the
// client accepts SSE; as JSON with the status given otherwise. Events for a client that takes
// only JSON are dropped, not written.
func TestAnswerWriterAnswerAlone(t *testing.T) {
	answer := &jsonrpc.Message{ID: json.RawMessage(`"a"`), Error: json.RawMessage(`{"code":-32601,"message":"no"}`)}
	g := &Gateway{}
	for _, tc := range []struct {
		name                string
		canStream, asStream bool
		wantType            string
		wantStatus          int
	}{
		{"stream", true, true, mediaSSE, http.StatusOK},
		{"JSON asked", true, false, "application/json", http.StatusNotFound},
		{"JSON-only client", false, true, "application/json", http.StatusNotFound},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rec := httptest.NewRecorder()
			aw := g.newAnswerWriter(rec, "", nil, tc.canStream)
			if !tc.canStream && !aw.event([]byte(`{"jsonrpc":"2.0","method":"notifications/message"}`)) {
				t.Fatal("an event for a JSON-only client was refused")
			}
			aw.answer(answer, tc.asStream, http.StatusNotFound)
			res := rec.Result()
			if ct := res.Header.Get("Content-Type"); ct != tc.wantType || res.StatusCode != tc.wantStatus {
				t.Fatalf("%d %s, want %d %s", res.StatusCode, ct, tc.wantStatus, tc.wantType)
			}
			want := string(answer.Encode())
			if tc.wantType == mediaSSE {
				want = string(wire.AppendEvent(nil, "", answer.Encode()))
			}
			if got := rec.Body.String(); got != want || res.Header.Get("Content-Length") != strconv.Itoa(len(want)) {
				t.Fatalf("body %q (Content-Length %s), want %q", got, res.Header.Get("Content-Length"), want)
			}
		})
	}
}
