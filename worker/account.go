//go:build linux

package worker

import (
	"cmp"
	"errors"
	"fmt"
	"os/user"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Account is a system account a worker runs as (worker_user): a worker then cannot read
// gemgate's memory, nor, with one account per user, another user's worker's.
type Account struct {
	Name   string
	Uid    uint32
	Gid    uint32
	Groups []uint32 // supplementary groups of the account
	Home   string
}

// ErrRootAccount refuses uid 0 as a worker account: the point of one is not to be root.
var ErrRootAccount = errors.New("a worker account must not be root (uid 0)")

// LookupAccount resolves a user name or a numeric uid from the system's account database.
func LookupAccount(name string) (*Account, error) { return lookupAccount(name, true) }

// ErrNotAccountName is wrapped by the refusal of a name no account can have (CheckAccountName).
var ErrNotAccountName = errors.New("is not an account name")

// CheckAccountName applies the syntax rules of an account name: not empty, no '/', ':', NUL
// or newline (the separators of /etc/passwd), and no leading '-'. Lookups and CheckUser both
// use it, so that they cannot disagree.
func CheckAccountName(name string) error {
	if name == "" || strings.ContainsAny(name, "/:\x00\n") || strings.HasPrefix(name, "-") {
		return fmt.Errorf("%q %w", name, ErrNotAccountName)
	}
	return nil
}

// lookupAccount is LookupAccount; byID false takes name as a name only, never as a uid.
func lookupAccount(name string, byID bool) (*Account, error) {
	if err := CheckAccountName(name); err != nil {
		return nil, err
	}
	var u *user.User
	var err error
	if n, numErr := strconv.ParseUint(name, 10, 32); numErr == nil && byID {
		if u, err = user.LookupId(name); err != nil {
			// A bare uid without an entry is allowed: its gid is the same number.
			if n == 0 {
				return nil, ErrRootAccount
			}
			return &Account{Name: name, Uid: uint32(n), Gid: uint32(n), Home: "/"}, nil
		}
	} else if u, err = lookupUser(name); err != nil {
		return nil, fmt.Errorf("worker account: %w", err)
	} else if !byID && u.Username != name {
		// A directory whose lookups fold case or normalise (LDAP, SSSD, winbind) finds
		// "alice" for "Alice": two users, whose names differ, would share one account.
		return nil, fmt.Errorf("worker account %q: the account database answers with the account %q: %w", name, u.Username, ErrOtherAccountName)
	}
	groups, _ := u.GroupIds()
	return accountOf(name, u, groups)
}

// lookupUser finds an account by name in the system's database (a test seam: a directory whose
// lookups fold case is not one a test host has).
var lookupUser = user.Lookup

// ErrOtherAccountName refuses, for a worker_user template, an account the system finds under
// another name than the one asked for (a lookup that folds case): a per-user account is the
// account of exactly the user's name, never one another user's name also finds.
var ErrOtherAccountName = errors.New("a per-user account must have exactly the name worker_user makes; this one is found under another spelling")

// ErrRootGroup refuses an account whose primary group is root's (gid 0 cannot be left out
// as a supplementary one can): its workers would read and write what that group may.
var ErrRootGroup = errors.New("a worker account's primary group must not be root's (gid 0)")

// accountOf is the account of u, found as name, with its supplementary groups but root's.
func accountOf(name string, u *user.User, groups []string) (*Account, error) {
	uid, err1 := strconv.ParseUint(u.Uid, 10, 32)
	gid, err2 := strconv.ParseUint(u.Gid, 10, 32)
	if err1 != nil || err2 != nil {
		return nil, fmt.Errorf("worker account %s: uid %q gid %q are not numbers", name, u.Uid, u.Gid)
	}
	if uid == 0 {
		return nil, ErrRootAccount
	}
	if gid == 0 {
		return nil, fmt.Errorf("worker account %s: %w", name, ErrRootGroup)
	}
	a := &Account{Name: u.Username, Uid: uint32(uid), Gid: uint32(gid), Home: u.HomeDir}
	for _, g := range groups {
		if n, err := strconv.ParseUint(g, 10, 32); err == nil && n != 0 {
			a.Groups = append(a.Groups, uint32(n))
		}
	}
	return a, nil
}

// MinUserUID is the least uid a worker_user template may resolve to: below are the system's
// accounts (daemon, www-data, postgres), which a user must not be able to name.
const MinUserUID = 1000

// AccountFor resolves worker_user for one gemgate user, "{user}" becoming the user's name.
// The name comes from a token, so the result is looked up as a name only (a user named "1"
// is not uid 1), and must be a regular account (uid MinUserUID or above, not nobody).
func AccountFor(template, gemgateUser string) (*Account, error) {
	if !strings.Contains(template, "{user}") {
		return LookupAccount(template)
	}
	if gemgateUser == "" {
		return nil, errors.New("worker_user names {user} but the request has no user name")
	}
	a, err := lookupAccount(AccountName(template, gemgateUser), false)
	if err != nil {
		return nil, err
	}
	if !regularAccount(a) {
		return nil, fmt.Errorf("worker account %s (uid %d) is a system account; worker_user %q must name regular accounts (uid %d or above): a system account", a.Name, a.Uid, template, MinUserUID)
	}
	return a, nil
}

// AccountName is the account worker_user template names for gemgate user gemgateUser.
func AccountName(template, gemgateUser string) string {
	return strings.ReplaceAll(template, "{user}", gemgateUser)
}

func regularAccount(a *Account) bool { return a.Uid >= MinUserUID && a.Uid != 65534 }

// How long the account check of CheckUser keeps a lookup's answer, and how many it keeps.
const (
	accountFound    = time.Minute
	accountMissing  = 10 * time.Second
	maxAccountsKept = 4096
)

var accountChecks accountCache

// accountCache is CheckUser's memory of account lookups: name → answer, until it expires.
// The check runs at every authentication, so answers are kept.
type accountCache struct {
	mu   sync.Mutex
	kept map[string]accountAnswer
}

type accountAnswer struct {
	err   error // nil: a regular account
	until time.Time
}

// The refusals of a name whose account is not a regular one, or does not exist.
var (
	errSystemAccountUser = &UserNameError{Reason: fmt.Sprintf(
		"names a system account (uid below %d, or 65534), which no worker may run as ({user} is in worker_user)", MinUserUID)}
	errNoAccountUser    = &UserNameError{Reason: "names a system account that does not exist ({user} is in worker_user)"}
	errOtherAccountUser = &UserNameError{Reason: "names a system account the account database finds under another spelling " +
		"(its lookups fold case), which another user's name may also find ({user} is in worker_user)"}
)

// check reports whether AccountFor would find a regular account of name: a UserNameError if it
// never will, else nil (also when the account database cannot be read: the start reports that).
func (c *accountCache) check(name string) error {
	now := time.Now()
	c.mu.Lock()
	ans, ok := c.kept[name]
	c.mu.Unlock()
	if ok && now.Before(ans.until) {
		return ans.err
	}
	a, err := lookupAccount(name, false)
	var unknown user.UnknownUserError
	switch {
	case err == nil && regularAccount(a):
		ans = accountAnswer{until: now.Add(accountFound)}
	case err == nil, errors.Is(err, ErrRootAccount), errors.Is(err, ErrRootGroup):
		ans = accountAnswer{err: errSystemAccountUser, until: now.Add(accountMissing)}
	case errors.As(err, &unknown):
		ans = accountAnswer{err: errNoAccountUser, until: now.Add(accountMissing)}
	case errors.Is(err, ErrOtherAccountName):
		ans = accountAnswer{err: errOtherAccountUser, until: now.Add(accountMissing)}
	default:
		return nil // the database could not be read: not an answer to keep or to refuse on
	}
	c.mu.Lock()
	if c.kept == nil || len(c.kept) >= maxAccountsKept {
		c.kept = make(map[string]accountAnswer) // forgetting costs only lookups
	}
	c.kept[name] = ans
	c.mu.Unlock()
	return ans.err
}

// credential is what the kernel switches to before the worker's program starts.
func (a *Account) credential() *syscall.Credential {
	return &syscall.Credential{Uid: a.Uid, Gid: a.Gid, Groups: a.Groups}
}

// env points HOME, USER and LOGNAME at the account, so a worker does not try gemgate's home.
func (a *Account) env(env []string) []string {
	out := slices.DeleteFunc(slices.Clone(env), func(kv string) bool {
		return strings.HasPrefix(kv, "HOME=") || strings.HasPrefix(kv, "USER=") || strings.HasPrefix(kv, "LOGNAME=")
	})
	return append(out, "HOME="+cmp.Or(a.Home, "/"), "USER="+a.Name, "LOGNAME="+a.Name)
}
