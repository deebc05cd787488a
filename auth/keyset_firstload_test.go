package auth

import (
	"crypto/ed25519"
	"testing"
	"time"
)

// TestKeyRacingTheFirstLoadIsNeverKeyless: a lookup while the first key set is being stored
// either finds the key or says the keys are unavailable (503); it never answers with no key
// and no error, which the signature check would turn into a 401 for a good token.
func TestKeyRacingTheFirstLoadIsNeverKeyless(t *testing.T) {
	s := newRemoteKeySet(Config{Issuer: "https://issuer.invalid", Audiences: []string{testResource}}.withDefaults())
	table := &keyTable{byID: map[string]PublicKey{"k1": {Key: ed25519.PublicKey(make([]byte, ed25519.PublicKeySize))}}, fetched: time.Now()}
	stop, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		for {
			select {
			case <-stop:
				return
			default:
			}
			// The load the lookup races: nothing, then the table (and back, to race again).
			s.keys.Store(table)
			s.keys.Store(nil)
		}
	}()
	defer func() { close(stop); <-done }()
	for deadline := time.Now().Add(2 * time.Second); time.Now().Before(deadline); {
		for range 1000 {
			k, err := s.Key(t.Context(), "k1")
			if err == nil && k.Key == nil {
				t.Fatal("a lookup racing the first load answered no key and no error")
			}
			select {
			case <-s.wake: // the loader's nudge, taken so that the next one is sent too
			default:
			}
		}
	}
}
