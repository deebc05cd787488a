package auth

import (
	"context"
	"log/slog"
	"sync/atomic"
	"testing"
)

// TestKeySetRefreshWithdrawsOnlyWhatChanged: a refresh that brings the same keys (same kid,
// key and "alg") withdraws nothing, so the verified-token cache is kept; a kid re-published
// with another "alg" or another key, or dropped, counts as withdrawn (the cache is cleared).
func TestKeySetRefreshWithdrawsOnlyWhatChanged(t *testing.T) {
	kr := keyring()
	iss := newTestIssuer(t, kr.rsa1, kr.rsa2) // rsa2 publishes its "alg"
	clock := newFakeClock()
	ks := newRemoteKeySet(Config{Issuer: iss.URL(), HTTPClient: iss.srv.Client(), Logger: slog.New(slog.DiscardHandler)}, clock.Now)
	var withdrawn atomic.Int32
	ks.onWithdraw = func() { withdrawn.Add(1) }
	ctx := context.Background()
	refresh := func(what string, want int32) {
		t.Helper()
		if err := ks.refresh(ctx, 0); err != nil {
			t.Fatalf("%s: refresh: %v", what, err)
		}
		if got := withdrawn.Swap(0); got != want {
			t.Errorf("%s: %d withdrawals, want %d", what, got, want)
		}
	}
	refresh("first load", 0)
	refresh("the same set again", 0)
	refresh("and again", 0)

	other := kr.rsa2
	other.publishAlg = false // the same kid and key, now without "alg": another key to a verifier
	iss.publish(t, kr.rsa1, other)
	refresh("a kid re-published with another alg", 1)

	iss.publish(t, kr.rsa1, other)
	refresh("unchanged after that", 0)

	iss.publish(t, kr.rsaOther, other) // rsaOther: rsa1's kid, another key
	refresh("a kid re-published with another key", 1)

	iss.publish(t, other)
	refresh("a kid dropped", 1)

	for _, tt := range []struct {
		a, b PublicKey
		same bool
	}{
		{PublicKey{Key: kr.rsa1.public(), Algorithm: "RS256"}, PublicKey{Key: kr.rsa1.public(), Algorithm: "RS256"}, true},
		{PublicKey{Key: kr.rsa1.public()}, PublicKey{Key: kr.rsa1.public()}, true},
		{PublicKey{Key: kr.rsa1.public(), Algorithm: "RS256"}, PublicKey{Key: kr.rsa1.public(), Algorithm: "PS256"}, false},
		{PublicKey{Key: kr.rsa1.public(), Algorithm: "RS256"}, PublicKey{Key: kr.rsa1.public()}, false},
		{PublicKey{Key: kr.rsa1.public()}, PublicKey{Key: kr.rsa2.public()}, false},
	} {
		if got := tt.a.same(tt.b); got != tt.same {
			t.Errorf("%+v same %+v = %v, want %v", tt.a.Algorithm, tt.b.Algorithm, got, tt.same)
		}
	}
}
