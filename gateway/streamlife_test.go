package gateway

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"testing"
	"time"

	"github.com/gemgate/gemgate/auth"
	"github.com/gemgate/gemgate/gateway/sessionless"
	"github.com/gemgate/gemgate/pool"
)

// expiringFixture is a fixture whose tokens are the test table's plus "alice-short", alice's
// read-write token, accepted until deadline (auth.AcceptedUntil) and refused as expired after.
func expiringFixture(t *testing.T, deadline time.Time) *fixture {
	return newFixture(t, func(o *Options) {
		o.Pool = pool.Settings{WorkerPer: pool.PerUser}
		authn := auth.NewAuthenticator(auth.AuthenticatorOptions{
			Verifier: expiringTokens{tokens, deadline}, ResourceMetadataURL: resourceMetadata, RequiredScopes: o.Policy.RequiredScopes(),
		})
		o.Authenticate, o.InsufficientScope = authn.Middleware, authn.InsufficientScope
	})
}

// A session's GET stream ends when the token that opened it is no longer accepted, not
// before: every request needs a live token, and a stream is one, which would otherwise go on
// receiving the session's messages for as long as its connection lasts (the keepalive keeps
// it open for hours) after its token expired or stopped being renewed. The session lives
// on: a fresh token's stream gets its messages, and the expired token cannot reopen one.
func TestStreamEndsWhenItsTokenIsNoLongerAccepted(t *testing.T) {
	deadline := time.Now().Add(4 * time.Second) // room for the set-up on a loaded machine
	f := expiringFixture(t, deadline)
	c := f.client("alice-rw")
	c.open()
	short := &client{f: f, token: "alice-short", session: c.session, version: c.version}
	st := short.openStream()
	if !st.ended(10 * time.Second) {
		t.Fatalf("a GET stream opened with a token accepted until %s is still open %v after", deadline.Format(time.TimeOnly), time.Since(deadline).Round(time.Millisecond))
	}
	if early := time.Until(deadline); early > 0 {
		t.Fatalf("the stream ended %v before its token's expiry", early)
	}
	if r := short.refusedGET(t, "GET with the expired token"); r.status != http.StatusUnauthorized {
		t.Errorf("GET with the expired token: %d; want 401", r.status)
	}
	fresh := c.openStream()
	if r := c.callTool("6", "toggle_extra_tool", map[string]any{}); r.status != http.StatusOK || r.only(t).Error != nil {
		t.Fatalf("toggle_extra_tool: %d %s", r.status, r.body)
	}
	for {
		m, ok := fresh.next(10 * time.Second)
		if !ok {
			t.Fatal("the fresh token's stream got no notifications/tools/list_changed")
		}
		if m.Method == "notifications/tools/list_changed" {
			return
		}
	}
}

// A 2026-07-28 subscriptions/listen stream ends when its token is no longer accepted, as a
// session's GET stream does; the token's refresh reopens it.
func TestListenEndsWhenItsTokenIsNoLongerAccepted(t *testing.T) {
	deadline := time.Now().Add(4 * time.Second) // room for the set-up on a loaded machine
	f := expiringFixture(t, deadline)
	c := f.client("alice-short")
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": "L1", "method": "subscriptions/listen",
		"params": map[string]any{"_meta": sessionlessMeta(), "notifications": map[string]any{"toolsListChanged": true}}})
	resp := c.postStreaming(ctx, string(body), sessionless.HeaderProtocolVersion, sessionless.Version, sessionless.HeaderMethod, "subscriptions/listen")
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("listen: %d", resp.StatusCode)
	}
	rd := bufio.NewReader(resp.Body)
	for {
		_, err := rd.ReadString('\n')
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("the listen stream opened with a token accepted until %s: %v, %v after it; want its end", deadline.Format(time.TimeOnly), err, time.Since(deadline).Round(time.Millisecond))
		}
	}
	if early := time.Until(deadline); early > 0 {
		t.Fatalf("the listen stream ended %v before its token's expiry", early)
	}
}

// expiringTokens is the test token table plus "alice-short", alice's read-write token that
// is valid until deadline and refused as expired after it.
type expiringTokens struct {
	testTokens
	deadline time.Time
}

func (e expiringTokens) Verify(ctx context.Context, raw string) (auth.Principal, error) {
	if raw == "alice-short" {
		if time.Now().After(e.deadline) {
			return auth.Principal{}, fmt.Errorf("%w: token expired", auth.ErrInvalidToken)
		}
		p, _ := e.testTokens.Verify(ctx, "alice-rw")
		p.Expiry = e.deadline.Add(-auth.DefaultClockSkew) // accepted until deadline, as a verifier with the default skew would
		return p, nil
	}
	return e.testTokens.Verify(ctx, raw)
}
