package sessionless

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"strings"
	"time"

	"github.com/gemgate/gemgate/auth"
)

// The requestState gemgate hands a sessionless client with an input-required result is opaque
// to the client: HMAC-SHA256, under a key drawn at random per process, over who the call belongs
// to (issuer, subject, access mode), the worker, the parked call, the input keys asked for, the
// request's method and name, and an expiry. It carries nothing the client may not see. A state
// of another gemgate process (another key) is told apart from a tampered one, so that the
// client can be told to start over.

const (
	statePrefix = "gg1." // begins every requestState gemgate issues
	// maxStateLen bounds a requestState gemgate hands out (wrapping a sessionless worker's
	// too: a bigger one is refused) or takes back.
	maxStateLen = 64 << 10
)

// stateClaims are what a requestState binds.
type stateClaims struct {
	KeyID    string   `json:"k"`
	Issuer   string   `json:"i"`
	Subject  string   `json:"s"`
	ReadOnly bool     `json:"ro"`
	Worker   string   `json:"w"`
	Park     string   `json:"p"`
	Method   string   `json:"m"`
	Name     string   `json:"n,omitempty"`
	Keys     []string `json:"q"`
	Expires  int64    `json:"e"`
	// Pass marks the state of a sessionless worker's own input-required result: it names no
	// parked call, and WorkerState is the worker's requestState, restored on the retry.
	Pass        bool   `json:"x,omitempty"`
	WorkerState string `json:"ws,omitempty"`
	// Scopes and Audience are the grant the worker was started with (Member.Grant): a pass
	// state's retry reaches the worker of its own token's grant, so a token granting other ones
	// is refused before a worker is looked for.
	Scopes   []string `json:"gs,omitempty"`
	Audience []string `json:"ga,omitempty"`
}

// Typed refusals of a requestState; each is an invalid-params error for the client.
var (
	errStateMalformed    = errors.New("requestState is not one gemgate issued")
	errStateTampered     = errors.New("requestState failed verification")
	errStateOtherProcess = errors.New("requestState was issued by another gemgate process; start the request again without it")
	errStateExpired      = errors.New("requestState expired; start the request again without it")
	errStateNotYours     = errors.New("requestState does not belong to this caller")
	errStateReadWrite    = errors.New("requestState is a read-write worker's, and the token may only read")
	errStateGone         = errors.New("requestState names no waiting call (answered, timed out or unknown); start the request again without it")
)

// stateKey is the process's MAC key, drawn at random by New.
type stateKey struct {
	key []byte
	id  string
}

func newStateKey() stateKey {
	k := stateKey{key: make([]byte, 32)}
	rand.Read(k.key) // never fails: crypto/rand ends the program instead
	sum := sha256.Sum256(append([]byte("gemgate requestState key id "), k.key...))
	k.id = hex.EncodeToString(sum[:8])
	return k
}

func (k stateKey) mac(payload []byte) []byte {
	m := hmac.New(sha256.New, k.key)
	m.Write(payload)
	return m.Sum(nil)
}

// seal makes a requestState of c (KeyID is set here).
func (k stateKey) seal(c stateClaims) string {
	c.KeyID = k.id
	payload, _ := json.Marshal(c)
	enc := base64.RawURLEncoding
	return statePrefix + enc.EncodeToString(payload) + "." + enc.EncodeToString(k.mac(payload))
}

// open verifies a requestState and returns its claims; the caller still checks who asks.
func (k stateKey) open(state string, now time.Time) (stateClaims, error) {
	var c stateClaims
	rest, ok := strings.CutPrefix(state, statePrefix)
	if !ok || len(state) > maxStateLen {
		return c, errStateMalformed
	}
	p64, m64, ok := strings.Cut(rest, ".")
	if !ok {
		return c, errStateTampered
	}
	enc := base64.RawURLEncoding
	payload, err1 := enc.DecodeString(p64)
	mac, err2 := enc.DecodeString(m64)
	if err1 != nil || err2 != nil {
		return c, errStateTampered
	}
	if !hmac.Equal(mac, k.mac(payload)) {
		// The unauthenticated key id only words the refusal: it grants nothing.
		var peek stateClaims
		if json.Unmarshal(payload, &peek) == nil && peek.KeyID != "" && peek.KeyID != k.id {
			return c, errStateOtherProcess
		}
		return c, errStateTampered
	}
	if err := json.Unmarshal(payload, &c); err != nil {
		return c, errStateTampered
	}
	if now.Unix() > c.Expires {
		return c, errStateExpired
	}
	return c, nil
}

// belongsTo checks the claims against the caller (p, with access readOnly) and the request
// retried. A read-only token may not answer a read-write worker (errStateReadWrite); a
// read-write token may answer a read-only one, as in a session, but retries a sessionless
// worker's own state only at the worker of its own mode, which is another.
func (c stateClaims) belongsTo(p auth.Principal, readOnly bool, method, name string) error {
	switch {
	case c.Issuer != p.Issuer || c.Subject != p.Subject:
		return errStateNotYours
	case readOnly && !c.ReadOnly:
		return errStateReadWrite
	case c.ReadOnly != readOnly && c.Pass:
		return errStateNotYours
	}
	if c.Method != method || c.Name != name {
		return errors.New("requestState belongs to another request")
	}
	return nil
}
