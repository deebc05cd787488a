package auth

import (
	"crypto/sha256"
	"errors"
	"fmt"
	"strconv"
	"sync"

	"github.com/gemgate/gemgate/internal/clip"
)

// ErrUserRefused is wrapped by the refusals of a verified token whose user gemgate will not
// serve ([UserNameError], [UserTakenError], [SubjectNamesError]). It is not [ErrInvalidToken]:
// a new token would carry the same name, and a 401 would loop the client through sign-in.
var ErrUserRefused = errors.New("auth: the token's user is refused")

// ErrUserNamesFull is wrapped by [UserNamesFullError].
var ErrUserNamesFull = errors.New("auth: no room to bind another user name")

// UserNameError: the token's user claim holds a name no worker can act as; Err is the
// launcher's reason (a fixed phrase). User is for the log only, quoted and clipped.
type UserNameError struct {
	Claim string
	User  string
	Err   error
}

func (e *UserNameError) Error() string {
	return fmt.Sprintf("auth: token claim %q: %v", e.Claim, e.Err)
}
func (e *UserNameError) Unwrap() []error { return []error{ErrUserRefused, e.Err} }

// UserTakenError: the token's user name is bound to another subject of the same issuer
// (UserBindings). Subject is the token's, BoundTo the one the name belongs to; both are for
// the log only.
type UserTakenError struct {
	Claim, User      string
	Subject, BoundTo string
}

func (e *UserTakenError) Error() string {
	return fmt.Sprintf("auth: user name of claim %q belongs to another subject", e.Claim)
}
func (e *UserTakenError) Unwrap() error { return ErrUserRefused }

// SubjectNamesError: the token's user name is new, and its subject has bound
// MaxNamesPerSubject names already (an account renamed again and again). User and Subject are
// for the log only.
type SubjectNamesError struct {
	Claim, User, Subject string
	Max                  int
}

func (e *SubjectNamesError) Error() string {
	return fmt.Sprintf("auth: the subject has bound %d user names of claim %q already", e.Max, e.Claim)
}
func (e *SubjectNamesError) Unwrap() error { return ErrUserRefused }

// MaxNamesPerSubject bounds the user names one subject binds, so that no one account can fill
// max_user_names and lock every new user out.
const MaxNamesPerSubject = 8

// UserNamesFullError: the token's user name is new, and UserBindings holds as many names as
// it may. Forgetting one would let its name pass to another subject.
type UserNamesFullError struct{ Max int }

func (e *UserNamesFullError) Error() string {
	return fmt.Sprintf("auth: %d user names are bound already (max_user_names)", e.Max)
}
func (e *UserNamesFullError) Unwrap() error { return ErrUserNamesFull }

// DefaultMaxUserNames is the bound of UserBindings when none is given: about 20 MB at most.
const DefaultMaxUserNames = 100_000

// UserBindings binds each user name to the first subject that presented it, per issuer, for
// the life of the process. A worker acts as the user name (GEMGATE_USER, {user}), so a second
// subject with the same name (a reused or self-chosen name) would get the same user's data;
// it is refused instead. Safe for concurrent use.
type UserBindings struct {
	claim string
	max   int

	mu        sync.Mutex
	n         int
	byName    map[string]map[[sha256.Size]byte]boundSubject // issuer → digest of user name → subject
	bySubject map[string]map[[sha256.Size]byte]int          // issuer → digest of subject → names bound
}

// boundSubject is who a name belongs to: a digest of the subject to compare, and its start
// for the log. Digests keep each binding's size fixed however long the claims are.
type boundSubject struct {
	digest [sha256.Size]byte
	shown  string
}

// NewUserBindings makes bindings of the names in claim (for the log); max ≤ 0 is
// DefaultMaxUserNames.
func NewUserBindings(claim string, max int) *UserBindings {
	if max <= 0 {
		max = DefaultMaxUserNames
	}
	return &UserBindings{claim: claim, max: max, byName: map[string]map[[sha256.Size]byte]boundSubject{},
		bySubject: map[string]map[[sha256.Size]byte]int{}}
}

// Bind binds p's user name to p's subject if the name is new, and reports an error if the
// name belongs to another subject, p's subject has bound MaxNamesPerSubject names, or there is
// no room for it.
func (b *UserBindings) Bind(p Principal) error {
	digest, name := sha256.Sum256([]byte(p.Subject)), sha256.Sum256([]byte(p.User))
	b.mu.Lock()
	defer b.mu.Unlock()
	names := b.byName[p.Issuer]
	if bound, ok := names[name]; ok {
		if bound.digest == digest {
			return nil
		}
		return &UserTakenError{Claim: b.claim, User: shown(p.User), Subject: shown(p.Subject), BoundTo: bound.shown}
	}
	subjects := b.bySubject[p.Issuer]
	if subjects[digest] >= MaxNamesPerSubject {
		return &SubjectNamesError{Claim: b.claim, User: shown(p.User), Subject: shown(p.Subject), Max: MaxNamesPerSubject}
	}
	if b.n >= b.max {
		return &UserNamesFullError{Max: b.max}
	}
	if names == nil {
		names = map[[sha256.Size]byte]boundSubject{}
		b.byName[p.Issuer] = names
	}
	if subjects == nil {
		subjects = map[[sha256.Size]byte]int{}
		b.bySubject[p.Issuer] = subjects
	}
	names[name] = boundSubject{digest: digest, shown: shown(p.Subject)}
	subjects[digest]++
	b.n++
	return nil
}

// shown is a claim value as a log line may carry it: quoted with control characters
// escaped, and clipped.
func shown(s string) string { return strconv.QuoteToASCII(clip.String(s, maxQuoted)) }
