package sessionless

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/gemgate/gemgate/auth"
	"github.com/gemgate/gemgate/gateway/wire"
	"github.com/gemgate/gemgate/jsonrpc"
	"github.com/gemgate/gemgate/policy"
	"github.com/gemgate/gemgate/pool"
	"github.com/gemgate/gemgate/telemetry"
)

// Steps are the core's pipeline steps, written once there for both eras and handed to New.
type Steps struct {
	// Fields reads, strictly, the fields every step decides on, as for a session's message
	// (a tools/call's name is the one check read: mr.Name).
	Fields func(msg *jsonrpc.Message) (progressToken json.RawMessage, he *wire.Error)
	// Identity is the pool identity a request of p's, with access, is served as.
	Identity func(r *http.Request, p auth.Principal, access policy.Access) pool.Identity
	// DrainRefusal is the 503 for a request of who's while the gateway drains; nil to serve it.
	DrainRefusal func(id json.RawMessage, who pool.Identity) *wire.Error
	// ToolGate is the one access decision on a tools/call of tool at m's worker.
	ToolGate func(ctx context.Context, m *pool.Member, log *slog.Logger, id json.RawMessage, access policy.Access, tool string) *wire.Error
	// Gate is ToolGate's decision on a prompts/get, resources/read, resources/subscribe or
	// completion/complete; nil for any other method. log is called only for a refusal's line.
	Gate func(ctx context.Context, m *pool.Member, log func() *slog.Logger, msg *jsonrpc.Message, access policy.Access) *wire.Error
	// ToolPages reads m's worker's tools/list page by page; false when it could not.
	ToolPages func(ctx context.Context, m *pool.Member, page func(result json.RawMessage) (done bool, err error)) bool
	// GrantRefusal refuses a request whose token grants less than m's worker was given;
	// GrantRefusalOf less than a worker given scopes and audience (Member.Grant's) was.
	GrantRefusal   func(m *pool.Member, p auth.Principal, id json.RawMessage, what string, log *slog.Logger) *wire.Error
	GrantRefusalOf func(scopes, audience []string, p auth.Principal, id json.RawMessage, what string, log *slog.Logger) *wire.Error
	// ReadOnlyAnswer refuses a read-only token's answer to a read-write worker's question (a
	// retry of a call parked on one), as the 2025-x era refuses a session's answer.
	ReadOnlyAnswer func(id json.RawMessage, access policy.Access) *wire.Error
	// CallError answers a request the pool could not serve (a worker gone meanwhile: 503, as
	// there is no session to be gone); AttachError one whose worker could not be had.
	CallError, AttachError func(id json.RawMessage, err error) *wire.Error
	// Await runs the one wait loop for a forwarded call, writes its answer and ends the call:
	// c.Span, the request's outcome, a tools/call's audit line and count.
	Await func(w http.ResponseWriter, r *http.Request, c *Wait)
	// AuditUnread writes the audit line of a tools/call refused before its tool was read, and
	// counts it; AuditAnswer of the client's answer to a worker.
	AuditUnread func(r *http.Request, msg *jsonrpc.Message, p auth.Principal, he *wire.Error)
	AuditAnswer func(log *slog.Logger, a pool.Answered, readOnly bool, outcome string)
	// StreamLife forgets the request's bearer token for a long-lived stream; end is closed
	// when that token expires (stop releases it).
	StreamLife func(r *http.Request) (end <-chan struct{}, stop func())
	// Outbound traces a message gemgate writes to the client.
	Outbound func(body []byte)
	// RoundTrip starts the span of msg's round trip to the worker and returns msg with that
	// span's trace context in params._meta (tracing on).
	RoundTrip func(ctx context.Context, msg *jsonrpc.Message) (trace.Span, *jsonrpc.Message, error)
}

// Config is what New needs besides the core's steps.
type Config struct {
	Pool  *pool.Pool
	Steps Steps
	Log   *slog.Logger
	// Legacy are the legacy revisions gemgate serves through initialize, newest first.
	Legacy []string
	// InputRequiredTimeout is how long a parked call waits for its client's retry; 0 is
	// DefaultInputRequiredTimeout.
	InputRequiredTimeout time.Duration
	// WorkerRetryAfter and ListenRetryAfter are the Retry-After for a worker that is gone,
	// and for a user with too many listen streams.
	WorkerRetryAfter, ListenRetryAfter time.Duration
	// Stopping is closed when the gateway shuts down: listen streams end.
	Stopping <-chan struct{}
	// Keepalive is the time between a listen stream's keepalive comments; WriteTimeout bounds
	// each of its writes.
	Keepalive, WriteTimeout time.Duration
	// Now is the clock a requestState's expiry is written and read by; nil is time.Now.
	Now func() time.Time
}

// Adapter is the 2026-07-28 era's adapter: the core hands it every request of the era (Post).
type Adapter struct {
	Config
	served       []string // every revision served, newest first
	key          stateKey // seals and opens requestStates
	listens      listenCounter
	parks        parkTable
	paramSchemas paramSchemas
}

// New is the adapter of a gateway whose core steps are c.Steps.
func New(c Config) *Adapter {
	if c.InputRequiredTimeout <= 0 {
		c.InputRequiredTimeout = DefaultInputRequiredTimeout
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	return &Adapter{Config: c, served: append([]string{Version}, c.Legacy...), key: newStateKey()}
}

// owner is who a parked call or a listen stream belongs to.
type owner struct{ issuer, subject string }

func ownerOf(p auth.Principal) owner { return owner{p.Issuer, p.Subject} }

// requestLog is the logger of a request of p's served by worker, with the request's trace id
// when it is traced.
func (a *Adapter) requestLog(ctx context.Context, p auth.Principal, worker string) *slog.Logger {
	return telemetry.RequestFrom(ctx).Log(a.Log.With("user", p.User, "worker", worker, "era", Version))
}

// Parked is the number of calls waiting for their client's input.
func (a *Adapter) Parked() int {
	a.parks.mu.Lock()
	defer a.parks.mu.Unlock()
	return len(a.parks.calls)
}
