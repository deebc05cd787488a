//go:build linux

package worker

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/gemgate/gemgate/internal/userdir"
)

// Identity is who a worker is started for: what its environment, command line and
// credential are made of.
type Identity struct {
	User, Subject string   // the name the worker acts as (GEMGATE_USER, {user}) and its owner
	Scopes        []string // the token's scopes (GEMGATE_SCOPES)
	ReadOnly      bool
	// Session (GEMGATE_SESSION) is the legacy session the worker serves with worker_per:
	// session, and the worker's own id with worker_per: user.
	Session string
	// Token is the raw bearer token of the opening request, for a credential exchange only
	// (or passthrough, if the operator chose it), and Expiry its expiry (zero if no token).
	Token  string
	Expiry time.Time
}

// Launch is how to start one worker: its process, and when the credential in its
// environment expires (zero if never), for on_token_expiry.
type Launch struct {
	Spec
	CredentialExpiry time.Time
}

// Credential is a backend credential for a worker. It prints as a redaction: its token must
// never reach a log line by accident.
type Credential struct {
	Token  string
	Expiry time.Time // zero when unknown or never
}

// String hides the token.
func (c Credential) String() string { return "[credential redacted]" }

// GoString hides the token from %#v too.
func (c Credential) GoString() string { return c.String() }

// LogValue hides the token from slog; the expiry is not secret.
func (c Credential) LogValue() slog.Value {
	return slog.GroupValue(slog.String("token", "[redacted]"), slog.Time("expiry", c.Expiry))
}

// CredentialSource obtains the backend credential a worker logs in with.
type CredentialSource interface {
	Credential(ctx context.Context, id Identity) (Credential, error)
}

// CommandLauncher starts a stdio MCP server from a command template. The worker learns who it
// serves from its environment (GEMGATE_USER, GEMGATE_SUBJECT, GEMGATE_READ_ONLY,
// GEMGATE_SCOPES, GEMGATE_SESSION; with a DataDir, GEMGATE_DATA_DIR and GEMGATE_USER_DATA_DIR),
// and gets its credential on GEMGATE_CREDENTIAL_FD unless CredentialStdin or CredentialEnv
// says otherwise. The gateway's own GEMGATE_* settings, secrets among them, are never passed on.
type CommandLauncher struct {
	Command      []string // argv; "{user}" in an argument becomes the user's name
	DataDir      string   // GEMGATE_DATA_DIR for workers that keep files, one folder per user
	Env          []string // extra KEY=VALUE pairs
	Credential   CredentialSource
	StopGrace    time.Duration
	WriteTimeout time.Duration // worker_write_timeout; zero means DefaultWriteTimeout

	// Sandbox, if set, confines every worker with bubblewrap; each launch adds to its lists the
	// worker's executable and the absolute paths of the command template, and shows of DataDir
	// only the user's folder, which it makes for the worker's account first.
	Sandbox *Sandbox
	Caps    *Caps // if set, bound each worker's memory, processes, CPU and open files
	// WorkerUser, if set, is the account workers run as (worker_user): a name or uid, or a
	// template in which "{user}" becomes the user's name, for one account per user.
	WorkerUser string
	// CredentialEnv puts the credential in the worker's environment (GEMGATE_CREDENTIAL),
	// for servers that only read it there. It weakens isolation: any process that may read
	// the worker's /proc/<pid>/environ reads the credential, for the worker's whole life.
	CredentialEnv bool
	// CredentialStdin hands the credential over as the first line of the worker's stdin
	// (Spec.CredentialStdin). It wins over CredentialEnv.
	CredentialStdin bool
}

func (l *CommandLauncher) Launch(ctx context.Context, id Identity) (Launch, error) {
	if len(l.Command) == 0 {
		return Launch{}, errors.New("no worker command configured")
	}
	path, err := exec.LookPath(l.Command[0])
	if err != nil {
		return Launch{}, fmt.Errorf("worker command: %w", err)
	}
	if path, err = filepath.Abs(path); err != nil {
		return Launch{}, fmt.Errorf("worker command: %w", err)
	}
	user := id.User
	if err := l.CheckUser(user); err != nil {
		return Launch{}, err
	}
	args := make([]string, 0, len(l.Command)-1)
	for _, a := range l.Command[1:] {
		args = append(args, strings.ReplaceAll(a, "{user}", user))
	}
	readOnly := "0"
	if id.ReadOnly {
		readOnly = "1"
	}
	env := append(inheritedEnv(),
		"GEMGATE_USER="+user,
		"GEMGATE_SUBJECT="+id.Subject,
		"GEMGATE_READ_ONLY="+readOnly,
		"GEMGATE_SCOPES="+strings.Join(GrantList(id.Scopes), " "),
		"GEMGATE_SESSION="+id.Session,
	)
	var dataDir, userDir string
	if l.DataDir != "" {
		if dataDir, err = filepath.Abs(l.DataDir); err != nil {
			return Launch{}, fmt.Errorf("data_dir: %w", err)
		}
		userDir = filepath.Join(dataDir, userdir.Name(user))
		env = append(env, "GEMGATE_DATA_DIR="+l.DataDir, "GEMGATE_USER_DATA_DIR="+userDir)
	}
	env = append(env, l.Env...)
	spec := Spec{Path: path, Args: args, Env: env, StopGrace: l.StopGrace, WriteTimeout: l.WriteTimeout, Caps: l.Caps}
	if l.WorkerUser != "" {
		if spec.RunAs, err = AccountFor(l.WorkerUser, user); err != nil {
			return Launch{}, fmt.Errorf("worker_user: %w", err)
		}
	}
	if l.Sandbox != nil {
		if spec.Sandbox, err = l.sandbox(path, dataDir, userDir, spec.RunAs); err != nil {
			return Launch{}, err
		}
	}
	var expiry time.Time
	if l.Credential != nil {
		cred, err := l.Credential.Credential(ctx, id)
		if err != nil {
			return Launch{}, fmt.Errorf("worker credential: %w", err)
		}
		if l.CredentialEnv && !l.CredentialStdin {
			spec.Env = append(spec.Env, "GEMGATE_CREDENTIAL="+cred.Token)
			spec.Secrets = append(spec.Secrets, []byte(cred.Token))
		} else {
			spec.Credential, spec.CredentialStdin = []byte(cred.Token), l.CredentialStdin
		}
		expiry = cred.Expiry
	}
	return Launch{Spec: spec, CredentialExpiry: expiry}, nil
}

// GrantList is a set of scopes or audiences in canonical order: sorted, without repeats; nil
// when empty. A worker is told its scope set so: every caller of the worker holds exactly it
// (the pool keys workers on it), in whatever order its token listed it.
func GrantList(values []string) []string {
	if len(values) == 0 {
		return nil
	}
	sorted := slices.Clone(values)
	slices.Sort(sorted)
	return slices.Compact(sorted)
}

// sandbox is the launcher's sandbox completed for one worker: its executable and the template's
// absolute paths (never one a user name filled in) shown over the private /tmp, and of dataDir
// only userDir, writable, which it makes for the worker's account (runAs) first.
func (l *CommandLauncher) sandbox(path, dataDir, userDir string, runAs *Account) (*Sandbox, error) {
	sb := &Sandbox{Bwrap: l.Sandbox.Bwrap, Readable: append(slices.Clone(l.Sandbox.Readable), path),
		Writable: slices.Clone(l.Sandbox.Writable), Hidden: l.Sandbox.Hidden}
	for _, a := range l.Command[1:] {
		if filepath.IsAbs(a) && !strings.Contains(a, "{user}") {
			sb.Readable = append(sb.Readable, filepath.Clean(a))
		}
	}
	if dataDir == "" {
		return sb, nil
	}
	dir, err := makeUserDir(dataDir, filepath.Base(userDir), runAs) // where it leads: bubblewrap binds that
	if err != nil {
		return nil, err
	}
	sb.DataDir, sb.UserDir = dir, filepath.Join(dir, filepath.Base(userDir))
	return sb, nil
}

// inheritedEnv is the gateway's environment without its own settings.
func inheritedEnv() []string {
	return slices.DeleteFunc(os.Environ(), func(kv string) bool { return strings.HasPrefix(kv, "GEMGATE_") })
}

// PassthroughCredential hands the client's own token to the worker. The MCP specification
// forbids this for tokens issued to the gateway: it is opt-in only, for backends that accept
// the gateway's audience.
type PassthroughCredential struct{}

func (PassthroughCredential) Credential(_ context.Context, id Identity) (Credential, error) {
	if id.Token == "" {
		return Credential{}, errors.New("no token to pass through (auth is off)")
	}
	return Credential{Token: id.Token, Expiry: id.Expiry}, nil
}

// Exchanger trades the client's token for one minted for the backend (RFC 8693).
type Exchanger interface {
	Exchange(ctx context.Context, subjectToken string) (token string, expiry time.Time, err error)
}

// ExchangeCredential obtains the worker's credential by token exchange at the issuer.
type ExchangeCredential struct{ Exchanger Exchanger }

func (e ExchangeCredential) Credential(ctx context.Context, id Identity) (Credential, error) {
	if id.Token == "" {
		return Credential{}, errors.New("no token to exchange (auth is off)")
	}
	tok, expiry, err := e.Exchanger.Exchange(ctx, id.Token)
	if expiry.IsZero() {
		// No expires_in: take the token's expiry, so that on_token_expiry still applies.
		expiry = id.Expiry
	}
	return Credential{Token: tok, Expiry: expiry}, err
}
