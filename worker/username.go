//go:build linux

package worker

import (
	"fmt"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"
)

// MaxUserNameBytes bounds the user name a worker acts as: it goes into the worker's
// environment, its log lines and, with {user}, its command line and account name.
const MaxUserNameBytes = 256

// UserNameError is a user name no worker can act as. Reason is a fixed phrase, never the
// name itself: it may reach a client.
type UserNameError struct{ Reason string }

func (e *UserNameError) Error() string { return "the user name " + e.Reason }

// CheckUser reports whether a worker can act as user. Authentication makes the same call
// (auth.AuthenticatorOptions.UserName), so that such a token is refused there rather than
// failing every start with a retryable 503.
//
// Always: not empty, at most MaxUserNameBytes, valid UTF-8, and no control character or line
// separator (they would forge log lines). With "{user}" in the command template or in
// worker_user, also: no leading '-', no '/', not "." or ".."; in worker_user, also a name of a
// regular account (as AccountFor finds it).
func (l *CommandLauncher) CheckUser(user string) error {
	switch {
	case user == "":
		return &UserNameError{Reason: "is empty"}
	case len(user) > MaxUserNameBytes:
		return &UserNameError{Reason: fmt.Sprintf("is longer than %d bytes", MaxUserNameBytes)}
	case !utf8.ValidString(user):
		return &UserNameError{Reason: "is not valid UTF-8"}
	}
	for _, r := range user {
		if unicode.IsControl(r) || r == '\u2028' || r == '\u2029' {
			return &UserNameError{Reason: "holds a control character"}
		}
	}
	if !l.userInArguments() {
		return nil
	}
	switch {
	case strings.HasPrefix(user, "-"):
		return &UserNameError{Reason: "begins with '-', which a worker would read as an option ({user} is in worker_command or worker_user)"}
	case strings.Contains(user, "/"):
		return &UserNameError{Reason: "holds a '/', which would step out of a path it is put in ({user} is in worker_command or worker_user)"}
	case user == "." || user == "..":
		return &UserNameError{Reason: "is . or .., which would step out of a path it is put in ({user} is in worker_command or worker_user)"}
	}
	if !strings.Contains(l.WorkerUser, "{user}") {
		return nil
	}
	name := AccountName(l.WorkerUser, user)
	if CheckAccountName(name) != nil {
		return &UserNameError{Reason: "makes a name no system account can have (':' in it, or a leading '-'; {user} is in worker_user)"}
	}
	return accountChecks.check(name)
}

// userInArguments reports whether the user name goes on the worker's command line or into the
// name of the account it runs as.
func (l *CommandLauncher) userInArguments() bool {
	hasUser := func(s string) bool { return strings.Contains(s, "{user}") }
	return hasUser(l.WorkerUser) || slices.ContainsFunc(l.Command[min(1, len(l.Command)):], hasUser)
}
