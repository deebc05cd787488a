package gateway

import (
	"errors"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"testing"

	"github.com/gemgate/gemgate/gateway/wire"
)

// failAfterWriter is a stream connection that takes n writes, then fails every write: a
// client whose connection died under its GET stream.
type failAfterWriter struct {
	h    http.Header
	n    int
	body strings.Builder
}

func (w *failAfterWriter) Header() http.Header { return w.h }
func (w *failAfterWriter) WriteHeader(int)     {}
func (w *failAfterWriter) Flush()              {}
func (w *failAfterWriter) Write(b []byte) (int, error) {
	if w.n <= 0 {
		return 0, errors.New("connection reset")
	}
	w.n--
	w.body.Write(b)
	return len(b), nil
}

// Every message a GET stream takes from the outbox is in the resumption log once it is
// taken, written or not: a stream that took three and died on the first write leaves all
// three for the GET that resumes after it, and a stream that attaches (resumes) while the
// old one still writes finds them too.
func TestTakenMessagesAreLoggedAsTaken(t *testing.T) {
	g := &Gateway{}
	s := &session{id: "s", outbox: wire.NewOutbox(nil, nil), log: slog.New(slog.NewTextHandler(io.Discard, nil))}
	for _, m := range []string{`{"jsonrpc":"2.0","method":"a"}`, `{"jsonrpc":"2.0","method":"b"}`, `{"jsonrpc":"2.0","method":"c"}`} {
		s.outbox.Push([]byte(m))
	}
	gen := s.outbox.Attach()
	store := s.outbox.Store()
	primed := store.Position() // the priming id the client holds
	evs, _, ok := s.outbox.TakeLogged(gen)
	if !ok || len(evs) != 3 {
		t.Fatalf("took %d messages", len(evs))
	}
	// A newer stream attaches before the old one wrote anything: the log has all three.
	if got, _, _, ok := store.Since(0, primed); !ok || len(got) != 3 {
		t.Fatalf("a stream resuming while the taker writes would replay %d of 3", len(got))
	}
	st := (&Gateway{}).newSSE(&failAfterWriter{h: http.Header{}, n: 0})
	if g.sendTaken(st, s, evs) {
		t.Fatal("a dead connection took the messages")
	}
	sid, after, err := store.Resolve(store.ID(0, primed))
	if err != nil {
		t.Fatal(err)
	}
	got, _, _, ok := store.Since(sid, after)
	if !ok || len(got) != 3 {
		t.Fatalf("a resumed GET stream would replay %d of the 3 messages the lost stream took", len(got))
	}
	for i, e := range got {
		if string(e.Data) != string(evs[i].Data) || store.ID(0, e.Seq) != evs[i].ID {
			t.Fatalf("event %d replayed as %s %q, taken as %s %q", i, store.ID(0, e.Seq), e.Data, evs[i].ID, evs[i].Data)
		}
	}
}

// A POST stream whose first write failed (it may have reached the client in part, priming id
// and all) is finished when its call is let go: a GET that resumes from that id gets what was
// logged and ends, rather than wait for events no one will log.
func TestPostStreamCutAtItsFirstWriteIsFinished(t *testing.T) {
	store := wire.NewEventStore()
	ps := (&Gateway{}).newAnswerWriter(&failAfterWriter{h: http.Header{}, n: 0}, "", store, true)
	if ps.event([]byte(`{"jsonrpc":"2.0","method":"notifications/progress","params":{}}`)) {
		t.Fatal("a dead connection took the first event")
	}
	if ps.primed {
		t.Fatal("a stream whose first write failed counts as resumable")
	}
	ps.finish()
	sid, after, err := store.Resolve(store.ID(ps.sid, 0))
	if err != nil {
		t.Fatal(err)
	}
	evs, done, _, ok := store.Since(sid, after)
	if !ok || len(evs) != 1 || !done {
		t.Fatalf("resumed from the priming id: %d events, done %v, ok %v; want the one logged and the end", len(evs), done, ok)
	}
}
