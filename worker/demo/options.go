package demo

import (
	"io"
	"log/slog"
	"os"
	"time"

	"go.opentelemetry.io/otel/trace"
)

// Options configure the demo server. The zero value is usable: no notes
// store (the notes tools answer with an error), a read-write session, logs
// discarded.
type Options struct {
	// DataDir holds one directory per user for the notes store.
	// Empty means no store (unless UserDataDir is set).
	DataDir string
	// UserDataDir, when set, is the user's own folder, which the notes
	// store uses instead of the user's folder of DataDir: gemgate names it
	// (GEMGATE_USER_DATA_DIR), and in its sandbox it is the only folder of
	// DataDir the worker sees.
	UserDataDir string
	// User and Session are the identity the gateway assigned to this worker.
	User, Session string
	// ReadOnly makes the mutating tools refuse, even when called.
	ReadOnly bool
	// Chatter is a test aid: Run writes a non-JSON line before every
	// message it writes to stdout, to prove the gateway skips such lines.
	// Never set it outside tests.
	Chatter bool
	// Logger receives the worker's own logs. Nil means discard.
	Logger *slog.Logger
	// Stderr receives plain marker lines tests look for (such as
	// "slow: cancelled"). Nil means os.Stderr.
	Stderr io.Writer
	// OTLP makes Run export a span per request over OTLP, as the standard
	// OTEL_EXPORTER_OTLP_* variables say, and flush them before it returns.
	OTLP bool
	// Tracer, when set, receives a span per request instead (tests).
	Tracer trace.TracerProvider

	// tick is the length of one "second" of the slow tool; zero means
	// one second. Tests shorten it.
	tick time.Duration
}

// Environment variables read by OptionsFromEnv.
const (
	EnvUser     = "GEMGATE_USER"
	EnvSession  = "GEMGATE_SESSION"
	EnvReadOnly = "GEMGATE_READ_ONLY"
	EnvDataDir  = "GEMGATE_DATA_DIR"
	EnvChatter  = "GEMGATE_DEMO_CHATTER"
	// EnvUserDataDir is the user's folder of GEMGATE_DATA_DIR, as gemgate
	// names it.
	EnvUserDataDir = "GEMGATE_USER_DATA_DIR"
)

// OptionsFromEnv reads the options the gateway passes in the worker's
// environment. Logs go to stderr as slog text; stdout carries only protocol
// messages. Spans go over OTLP when OTEL_EXPORTER_OTLP_ENDPOINT or
// OTEL_EXPORTER_OTLP_TRACES_ENDPOINT is set. The session is read-only unless GEMGATE_READ_ONLY is exactly
// "0": an unset or mistyped value fails closed.
func OptionsFromEnv() Options {
	return Options{
		DataDir:     os.Getenv(EnvDataDir),
		UserDataDir: os.Getenv(EnvUserDataDir),
		User:        os.Getenv(EnvUser),
		Session:     os.Getenv(EnvSession),
		ReadOnly:    os.Getenv(EnvReadOnly) != "0",
		Chatter:     os.Getenv(EnvChatter) == "1",
		Logger:      slog.New(slog.NewTextHandler(os.Stderr, nil)),
		Stderr:      os.Stderr,
		OTLP:        otlpConfigured(),
	}
}

func (o Options) logger() *slog.Logger {
	if o.Logger == nil {
		return slog.New(slog.DiscardHandler)
	}
	return o.Logger
}

func (o Options) stderr() io.Writer {
	if o.Stderr == nil {
		return os.Stderr
	}
	return o.Stderr
}

func (o Options) slowTick() time.Duration {
	if o.tick <= 0 {
		return time.Second
	}
	return o.tick
}
