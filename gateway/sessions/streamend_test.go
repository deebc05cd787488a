package sessions

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
	"testing/synctest"
	"time"

	"github.com/gemgate/gemgate/auth"
)

// TestStreamEndWithoutToken: with no token to outlive, a stream ends only with also; with
// neither, never.
func TestStreamEndWithoutToken(t *testing.T) {
	r := httptest.NewRequest("GET", "/mcp", nil)
	end, stop := StreamEnd(r, nil)
	if end != nil {
		t.Error("a stream with nothing to end it has an end")
	}
	stop()

	also, cancel := context.WithCancel(context.Background())
	end, stop = StreamEnd(r, also)
	defer stop()
	select {
	case <-end:
		t.Fatal("ended before also was done")
	default:
	}
	cancel()
	<-end
}

// TestStreamEndWithToken: a stream opened with a token ends when the token is no longer
// accepted (its expiry plus the clock skew allowed), not before, also given or not; and
// earlier when also is done first.
func TestStreamEndWithToken(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		// opened is a request whose token expires in a minute, and when it stops being accepted.
		opened := func() (*http.Request, time.Time) {
			p := auth.Principal{Subject: "alice", Expiry: time.Now().Add(time.Minute)}
			r := httptest.NewRequest("GET", "/mcp", nil)
			return r.WithContext(auth.WithPrincipal(r.Context(), p)), auth.AcceptedUntil(p)
		}
		for _, also := range []context.Context{nil, context.Background()} {
			r, until := opened()
			end, stop := StreamEnd(r, also)
			if end == nil {
				t.Fatal("a stream opened with a token has no end")
			}
			<-end
			if now := time.Now(); !now.Equal(until) {
				t.Errorf("also %v: the stream ended %v after its token stopped being accepted, want at once",
					also, now.Sub(until))
			}
			stop()
		}

		r, until := opened()
		also, cancel := context.WithCancel(context.Background())
		end, stop := StreamEnd(r, also)
		defer stop()
		time.Sleep(time.Second)
		select {
		case <-end:
			t.Fatal("ended before also was done or the token expired")
		default:
		}
		cancel()
		<-end
		if !time.Now().Before(until) {
			t.Error("also done did not end the stream before the token's expiry")
		}
	})
}
