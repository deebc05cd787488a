package auth

import (
	"crypto/sha256"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"sync"

	"github.com/gemgate/gemgate/internal/clip"
)

// ErrUserRefused is wrapped by the refusals of a verified token whose user gemgate will not
// serve: one no worker can act as, one another subject holds, one new name too many. It is
// not [ErrInvalidToken]: a new token would carry the same name, and a 401 would loop the
// client through sign-in.
var ErrUserRefused = errors.New("auth: the token's user is refused")

// ErrUserNamesFull is wrapped by the refusal of a new user name when [UserBindings] holds as
// many names as it may. Forgetting one would let its name pass to another subject.
var ErrUserNamesFull = errors.New("auth: no room to bind another user name")

// MaxNamesPerSubject bounds the user names one subject binds, so that no one account can fill
// max_user_names and lock every new user out.
const MaxNamesPerSubject = 8

// stableUserClaim is the advice of a refusal that a user_claim users can change causes.
const stableUserClaim = "Use a user_claim the identity provider never lets users change or reuse (sub; on Keycloak, preferred_username with Edit username off)"

// userNameError: the token's user claim holds a name no worker can act as; cause is the
// launcher's reason (a fixed phrase). user, quoted and clipped (shown), is for the log only.
func userNameError(claim, user string, cause error) error {
	return &refusalError{kind: ErrUserRefused, cause: cause, reason: ReasonUserName,
		text: fmt.Sprintf("auth: token claim %q: %v", claim, cause),
		desc: fmt.Sprintf("token claim %s: %v; gemgate cannot run a worker as this user, so it will not serve this account", claim, cause),
		attrs: []slog.Attr{slog.String("claim", claim), slog.String("user", user),
			slog.String("problem", cause.Error())}}
}

// userTakenError: the token's user name is bound to another subject of the same issuer;
// subject is the token's, boundTo the one the name belongs to, both shown, for the log only.
func userTakenError(claim, user, subject, boundTo string) error {
	return &refusalError{kind: ErrUserRefused, reason: ReasonUserTaken,
		text: fmt.Sprintf("auth: user name of claim %q belongs to another subject", claim),
		desc: fmt.Sprintf("token claim %s names a user that another account (subject) holds at this gateway; ask the operator", claim),
		attrs: []slog.Attr{slog.String("claim", claim), slog.String("user", user),
			slog.String("subject", subject), slog.String("bound_subject", boundTo)},
		hint: "two subjects of the issuer carry one user name; workers act as the name, so only the first is served. " + stableUserClaim}
}

// subjectNamesError: the token's user name is new, and its subject has bound
// MaxNamesPerSubject names already (an account renamed again and again).
func subjectNamesError(claim, user, subject string) error {
	return &refusalError{kind: ErrUserRefused, reason: ReasonUserRenames,
		text: fmt.Sprintf("auth: the subject has bound %d user names of claim %q already", MaxNamesPerSubject, claim),
		desc: fmt.Sprintf("token claim %s names a new user for an account that has used %d user names at this gateway already; ask the operator", claim, MaxNamesPerSubject),
		attrs: []slog.Attr{slog.String("claim", claim), slog.String("user", user),
			slog.String("subject", subject), slog.Int("max_names_per_subject", MaxNamesPerSubject)},
		hint: "one subject carries ever new user names (an account renamed again and again); each is bound to it until gemgate restarts, so past a few new ones are refused. " + stableUserClaim}
}

// userNamesFullError: the token's user name is new, and the bindings hold max names.
func userNamesFullError(max int) error {
	return &refusalError{kind: ErrUserNamesFull, reason: ReasonUserFull,
		text:  fmt.Sprintf("auth: %d user names are bound already (max_user_names)", max),
		desc:  "the gateway cannot serve a new user until its operator raises max_user_names",
		attrs: []slog.Attr{slog.Int("max_user_names", max)}}
}

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
		return userTakenError(b.claim, shown(p.User), shown(p.Subject), bound.shown)
	}
	subjects := b.bySubject[p.Issuer]
	if subjects[digest] >= MaxNamesPerSubject {
		return subjectNamesError(b.claim, shown(p.User), shown(p.Subject))
	}
	if b.n >= b.max {
		return userNamesFullError(b.max)
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
