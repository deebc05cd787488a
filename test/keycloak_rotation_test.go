package test

import (
	"encoding/base64"
	"net/http"
	"path"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// kcKeyRefreshInterval is the least gap between JWKS fetches triggered by an unknown key id
// (key_refresh_interval) of the two gemgates that see the rotation through: a quarter of the
// default minute, which the test waits out once. The rate limit itself is pinned by gRate.
const kcKeyRefreshInterval = 15 * time.Second

// kcRealmKeys is the admin API's view of the realm's keys (GET /keys).
type kcRealmKeys struct {
	Active map[string]string `json:"active"`
	Keys   []kcRealmKey      `json:"keys"`
}

type kcRealmKey struct {
	Kid              string `json:"kid"`
	ProviderID       string `json:"providerId"`
	ProviderPriority int    `json:"providerPriority"`
}

// activeRS256 is the realm's active RS256 key: its kid, its provider component and priority.
func (k kcRealmKeys) activeRS256(t *testing.T) (kid, provider string, priority int) {
	t.Helper()
	kid = k.Active["RS256"]
	for _, key := range k.Keys {
		if key.Kid == kid {
			return kid, key.ProviderID, key.ProviderPriority
		}
	}
	t.Fatalf("the realm has no active RS256 key: %+v", k)
	return
}

func (k kcRealmKeys) has(kid string) bool {
	return slices.ContainsFunc(k.Keys, func(key kcRealmKey) bool { return key.Kid == kid })
}

// kcTry opens a session with token and returns the status and the WWW-Authenticate challenge.
func kcTry(t *testing.T, g *gemgate, token string) (int, string) {
	t.Helper()
	s := &kcRaw{url: g.URL}
	status, h, _ := s.post(t, token, map[string]any{"id": 1, "method": "initialize", "params": map[string]any{
		"protocolVersion": "2025-06-18", "capabilities": map[string]any{}, "clientInfo": map[string]any{"name": "gemgate-keycloak-test", "version": "1"}}})
	return status, h.Get("WWW-Authenticate")
}

// kcFetches counts gemgate's successful JWKS fetches, from its debug log.
func kcFetches(g *gemgate) int { return len(kcLogLines(g, "signing keys loaded")) }

// A new realm key becomes active while two gemgates run: g1 knew only the old key, g2 starts
// with both. Old-key tokens keep working; a new-kid token is refused until g1 may refetch (once
// an interval), then accepted. After the old key's provider is removed, gemgate keeps accepting
// old-key tokens until an unknown kid makes it refetch; then they fail. One interval of waiting
// covers both gemgates. The realm is left with the new key only, which later tests do not mind:
// each starts its own gemgate.
func TestKeycloakKeyRotation(t *testing.T) {
	e := needKeycloak(t)
	admin := newKCAdmin(t, e)
	var keys kcRealmKeys
	admin.do(t, http.MethodGet, "/keys", nil, &keys)
	oldKid, oldProvider, oldPriority := keys.activeRS256(t)

	refresh := []string{"--key-refresh-interval", kcKeyRefreshInterval.String()}
	g1 := kcServe(t, e, kcServeAddr, nil, refresh...)
	// gRate fetched its keys before the rotation and may not refetch for half an hour: it pins
	// the rate limit whatever the rotation below takes on a loaded machine.
	gRateStarted := time.Now()
	gRate := kcServe(t, e, freeAddr(t), nil, "--key-refresh-interval", "30m")
	ci := func() string { return kcCIToken(t, e, "mcp:use").AccessToken }
	old := make([]string, 5)
	for i := range old {
		old[i] = ci()
		if kid := kcKid(t, old[i]); kid != oldKid {
			t.Fatalf("token %d has kid %s, want the active %s", i, kid, oldKid)
		}
	}
	if status, ch := kcTry(t, g1, old[0]); status != http.StatusOK {
		t.Fatalf("old-key token before the rotation: %d %s", status, ch)
	}

	// Rotate: a generated RSA key with a higher priority becomes the one Keycloak signs with.
	var realm struct {
		ID string `json:"id"`
	}
	admin.do(t, http.MethodGet, "", nil, &realm)
	resp := admin.do(t, http.MethodPost, "/components", map[string]any{
		"name": "gemgate-test-rotated-" + strconv.FormatInt(time.Now().Unix(), 10), "providerId": "rsa-generated",
		"providerType": "org.keycloak.keys.KeyProvider", "parentId": realm.ID,
		"config": map[string][]string{"priority": {strconv.Itoa(oldPriority + 100)}, "enabled": {"true"}, "active": {"true"},
			"algorithm": {"RS256"}, "keySize": {"2048"}},
	}, nil)
	if resp.StatusCode != http.StatusCreated {
		t.Fatalf("adding a key provider answered %s", resp.Status)
	}
	t.Logf("added key provider %s", path.Base(resp.Header.Get("Location")))
	admin.do(t, http.MethodGet, "/keys", nil, &keys)
	newKid, _, _ := keys.activeRS256(t)
	if newKid == oldKid || !keys.has(oldKid) {
		t.Fatalf("after adding a provider the active RS256 key is %s (old %s, still listed: %v)", newKid, oldKid, keys.has(oldKid))
	}
	fresh := ci()
	if kid := kcKid(t, fresh); kid != newKid {
		t.Fatalf("a token after the rotation has kid %s, want %s", kid, newKid)
	}

	// gRate fetched at start, less than its interval ago: the unknown kid does not refetch.
	since := time.Since(gRateStarted)
	if since > 29*time.Minute {
		t.Fatalf("the rotation took %v, longer than gRate's refresh interval; the refusal below would prove nothing", since)
	}
	if status, ch := kcTry(t, gRate, fresh); status != http.StatusUnauthorized || !strings.Contains(ch, `error="invalid_token"`) {
		t.Errorf("new-kid token %v after gRate's only fetch: %d %s, want 401 invalid_token (refetch at most once an interval)", since, status, ch)
	}
	if n := kcFetches(gRate); n != 1 {
		t.Errorf("gRate fetched its keys %d times, want only its first fetch", n)
	}
	if status, ch := kcTry(t, g1, old[1]); status != http.StatusOK {
		t.Errorf("old-key token on g1 after the rotation: %d %s", status, ch)
	}

	// g2 starts now and loads both keys.
	g2 := kcServe(t, e, freeAddr(t), nil, refresh...)
	g2Ready := time.Now()
	if status, ch := kcTry(t, g2, old[2]); status != http.StatusOK {
		t.Errorf("old-key token on g2 (both keys loaded): %d %s", status, ch)
	}
	if status, ch := kcTry(t, g2, ci()); status != http.StatusOK {
		t.Errorf("new-key token on g2 (both keys loaded): %d %s", status, ch)
	}

	// Remove the old key.
	admin.do(t, http.MethodDelete, "/components/"+oldProvider, nil, nil)
	admin.do(t, http.MethodGet, "/keys", nil, &keys)
	if keys.has(oldKid) {
		t.Fatalf("the old key %s is still in the realm after deleting its provider", oldKid)
	}
	// Until g2 refetches, the old key it holds still verifies.
	if status, ch := kcTry(t, g2, old[3]); status != http.StatusOK {
		t.Errorf("old-key token on g2 after the removal, before any refetch: %d %s", status, ch)
	}

	if wait := time.Until(g2Ready.Add(kcKeyRefreshInterval + time.Second)); wait > 0 {
		t.Logf("waiting %v for gemgate's key refresh interval", wait.Round(time.Second))
		time.Sleep(wait)
	}

	// g1: the new kid now triggers a fetch, which no longer holds the old key.
	if status, ch := kcTry(t, g1, fresh); status != http.StatusOK {
		t.Errorf("new-kid token on g1 after the interval: %d %s\nlogs:\n%s", status, ch, g1.logs)
	}
	for deadline := time.Now().Add(5 * time.Second); kcFetches(g1) < 2 && time.Now().Before(deadline); {
		time.Sleep(50 * time.Millisecond)
	}
	if n := kcFetches(g1); n != 2 {
		t.Errorf("g1 fetched the JWKS %d times, want 2 (start, new kid)", n)
	}
	if status, _ := kcTry(t, g1, old[4]); status != http.StatusUnauthorized {
		t.Errorf("unseen old-key token on g1 after its refetch: %d, want 401", status)
	}

	// g2: any unknown kid makes it refetch; then the old key is gone.
	if status, _ := kcTry(t, g2, kcUnknownKidToken(e)); status != http.StatusUnauthorized {
		t.Errorf("a token with an unknown kid: %d, want 401", status)
	}
	// gemgate's log reaches the test through a pipe; give the line a moment to arrive.
	for deadline := time.Now().Add(5 * time.Second); kcFetches(g2) < 2 && time.Now().Before(deadline); {
		time.Sleep(50 * time.Millisecond)
	}
	if n := kcFetches(g2); n != 2 {
		t.Errorf("g2 fetched the JWKS %d times, want 2 (start, unknown kid)", n)
	}
	if status, _ := kcTry(t, g2, old[4]); status != http.StatusUnauthorized {
		t.Errorf("unseen old-key token on g2 after its refetch: %d, want 401", status)
	}
	if len(kcLogLines(g2, `"reason":"unknown_key"`)) == 0 {
		t.Errorf("g2 logged no refusal with reason unknown_key")
	}
	// A token verified before the removal is not served from gemgate's verified-token cache
	// once the refetch has withdrawn its key.
	if status, _ := kcTry(t, g2, old[3]); status != http.StatusUnauthorized {
		t.Errorf("an old-key token g2 verified before the removal, presented after its refetch: %d, want 401", status)
	}
}

// kcUnknownKidToken is a well-formed JWS naming a key id no issuer has; its signature is junk.
func kcUnknownKidToken(e kcEnv) string {
	enc := base64.RawURLEncoding.EncodeToString
	return enc([]byte(`{"alg":"RS256","typ":"JWT","kid":"gemgate-test-unknown-kid"}`)) + "." +
		enc([]byte(`{"iss":"`+e.Issuer+`","sub":"nobody","aud":"`+e.DemoAudience+`","exp":4102444800}`)) + "." +
		enc([]byte("not a signature"))
}
