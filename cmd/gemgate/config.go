package main

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/gemgate/gemgate/auth"
	"github.com/gemgate/gemgate/gateway/limit"
	"github.com/gemgate/gemgate/policy"
)

// Config is every setting of gemgate. Each has one name in three spellings: the config key
// (`stream_loss_grace`), the flag (`--stream-loss-grace`) and the environment variable
// (`GEMGATE_STREAM_LOSS_GRACE`). Later sources win: defaults, the YAML file, the environment,
// then flags.
type Config struct {
	Listen    string `key:"listen" help:"address the MCP endpoint listens on"`
	PublicURL string `key:"public_url" help:"the public URL of the MCP endpoint; the OAuth resource identifier (default: derived from listen, loopback only)"`
	MCPPath   string `key:"mcp_path" help:"path of the MCP endpoint"`

	Auth           string        `key:"auth" choices:"oidc,none" help:"oidc (validate bearer tokens from issuer) or none (loopback only)"`
	Issuer         string        `key:"issuer" help:"OAuth issuer URL (e.g. a Keycloak realm URL)"`
	JWKSURL        string        `key:"jwks_url" help:"signing keys URL, instead of OIDC discovery"`
	Audiences      []string      `key:"audiences" help:"extra accepted token audiences besides public_url"`
	UserClaim      string        `key:"user_claim" help:"token claim naming the user (preferred_username on Keycloak)"`
	MaxUserNames   int           `key:"max_user_names" help:"user names gemgate binds to their first subject when user_claim is not sub; a new name beyond it is refused (503)"`
	KeyRefresh     time.Duration `key:"key_refresh_interval" help:"least time between fetches of the issuer's keys when a token names an unknown key"`
	RequiredScopes []string      `key:"required_scopes" help:"scopes every request needs"`
	WriteScope     string        `key:"write_scope" help:"scope that makes a session read-write"`
	ExtraScopes    []string      `key:"extra_scopes" help:"further scopes to advertise in metadata"`
	ReadOnlyTools  []string      `key:"read_only_tools" help:"tools (names or globs) allowed in read-only sessions"`
	TrustHints     bool          `key:"trust_read_only_hints" help:"let a tool's readOnlyHint annotation vouch for it in read-only sessions"`

	Rules [policy.Kinds][]policy.Rule // tool_rules, prompt_rules, resource_rules: lists of mappings, so in the config file only

	Worker           string   `key:"worker" choices:"demo,command,gemstone" help:"demo (built in), command or gemstone"`
	WorkerCommand    []string `key:"worker_command" list:"words" help:"stdio MCP server command for worker=command, as shell words ('quotes' and \\ escapes; no expansion) or a YAML list; {user} expands to the user"`
	DataDir          string   `key:"data_dir" help:"data directory for workers that keep files (the demo's notes)"`
	WorkerCredential string   `key:"worker_credential" choices:"none,exchange,passthrough" help:"none, exchange (RFC 8693) or passthrough (discouraged); default exchange for worker=gemstone, otherwise none"`
	ExchangeClientID string   `key:"exchange_client_id" help:"gemgate's client id at the issuer, for token exchange"`
	ExchangeSecret   string   `key:"exchange_client_secret" secret:"true" help:"gemgate's client secret, for token exchange (prefer the environment)"`
	ExchangeAudience string   `key:"exchange_audience" help:"audience of exchanged worker credentials"`
	OnTokenExpiry    string   `key:"on_token_expiry" help:"when a worker's credential expires: keep, restart (fresh credential and handshake, worker state lost, sessions kept) or end (the worker and its sessions)"`

	// How workers are shared and how long they live (docs/session-lifetime.md, "Worker lifetime").
	WorkerPer         string        `key:"worker_per" help:"user (one worker per user and access mode, shared by the user's sessions) or session (one worker per session); default session for worker=gemstone, otherwise user"`
	WorkerIdleTimeout time.Duration `key:"worker_idle_timeout" help:"a per-user worker with no session attached and no call in flight ends after this"`
	OnWorkerExit      string        `key:"on_worker_exit" help:"when a per-user worker dies: keep its sessions (the next request starts a fresh worker) or end them; per-session workers always end their session; default end for worker=gemstone (keep is refused there), otherwise keep"`
	MaxWorkers        int           `key:"max_workers" help:"workers running at once (503 beyond); default sized like max_sessions"`
	MaxCallsPerWorker int           `key:"max_calls_per_worker" help:"calls a worker holds, running and queued (429 beyond)"`
	WorkerConcurrency int           `key:"worker_concurrency" help:"calls running at a worker at once, the rest queued fairly across sessions; 0 = unlimited (worker=gemstone: 1)"`
	ExchangeTokenURL  string        `key:"exchange_token_url" help:"token endpoint for token exchange (default: from the issuer's discovery document)"`

	// Worker isolation (docs/configuration.md, "Worker isolation").
	WorkerSandbox         string        `key:"worker_sandbox" choices:"auto,bwrap,none" help:"auto (bubblewrap when it works on this host), bwrap (required) or none; default none for worker=gemstone run by an ordinary account (its relay is a linked gem), otherwise auto"`
	WorkerSandboxWritable []string      `key:"worker_sandbox_writable" help:"host paths workers may write inside the sandbox, besides data_dir"`
	WorkerSandboxReadable []string      `key:"worker_sandbox_readable" help:"host paths under /tmp workers may read inside the sandbox (the rest of the host is visible read-only)"`
	WorkerUser            string        `key:"worker_user" help:"account workers run as when gemgate runs as root: a name or uid, or a template with {user} for one account per user"`
	WorkerCredentialEnv   bool          `key:"worker_credential_env" help:"put the worker credential in GEMGATE_CREDENTIAL instead of on a descriptor (weaker: readable in /proc by the worker's uid); for servers that read only the environment"`
	WorkerWriteTimeout    time.Duration `key:"worker_write_timeout" help:"longest a write to a worker may wait for it to read; a worker that stays full longer is stopped as hung"`

	// Worker caps (docs/configuration.md, "Worker resource caps"): auto, none (or 0), or a value.
	WorkerMemoryMax    string `key:"worker_memory_max" help:"memory of one worker: a size (512MiB, 2GiB), none, or auto (an eighth of the host's memory, 1-4 GiB); cgroup v2 memory.max, or RLIMIT_DATA per process"`
	WorkerPidsMax      string `key:"worker_pids_max" help:"processes and threads of one worker: a number, none, or auto (256); cgroup v2 pids.max, or RLIMIT_NPROC per worker account"`
	WorkerCPUMax       string `key:"worker_cpu_max" help:"CPUs one worker may use: a number (0.5, 2), none, or auto (half the host's CPUs, at least 1); cgroup v2 cpu.max only"`
	WorkerOpenFilesMax string `key:"worker_open_files_max" help:"open files per worker process: a number, none, or auto (1024); RLIMIT_NOFILE"`

	// worker=gemstone (see docs/gemstone.md); flat keys like every other setting.
	GemStoneHome      string `key:"gemstone_home" help:"GemStone product directory for worker=gemstone (default: $GEMSTONE)"`
	GemStoneGlobalDir string `key:"gemstone_global_dir" help:"GEMSTONE_GLOBAL_DIR the stone runs with (default: found by asking gslist)"`
	GemStoneStone     string `key:"gemstone_stone" help:"the stone's name (default: the service ini's set gemstone)"`
	GemStoneINI       string `key:"gemstone_service_ini" help:"topaz ini file (mode 0600) of the GemStone service account the relay logs in with"`
	GemStoneGemConfig string `key:"gemstone_gem_config" help:"gemnetobject -C parameters each user's gem is forked with, NAME=value; pairs without spaces, e.g. GEM_TEMPOBJ_CACHE_SIZE=900000; (default: the NetLDI's)"`
	GemStoneScriptDir string `key:"gemstone_script_dir" help:"folder, gemgate's user's own, the relay script is written to (default: the user's cache directory)"`

	MetricsListen string   `key:"metrics_listen" help:"address of the Prometheus /metrics listener, or off"`
	LogFormat     string   `key:"log_format" help:"json or text"`
	LogLevel      string   `key:"log_level" help:"debug, info, warn or error"`
	TraceMessages bool     `key:"trace_messages" help:"log every JSON-RPC message body"`
	TraceLimit    string   `key:"trace_limit" help:"cap on traced bodies in bytes, or none"`
	TraceEndpoint string   `key:"trace_endpoint" help:"OTLP endpoint URL spans are exported to, as OTEL_EXPORTER_OTLP_ENDPOINT (which it overrides); tracing is off without either"`
	TraceUser     bool     `key:"trace_user" help:"name the user on each request's span (gemgate.user)"`
	TraceBaggage  bool     `key:"trace_baggage" help:"take a client's W3C baggage and pass it on to the worker (dropped otherwise)"`
	TLSCert       string   `key:"tls_cert" help:"TLS certificate file (PEM)"`
	TLSKey        string   `key:"tls_key" help:"TLS key file (PEM)"`
	TrustedProxy  []string `key:"trusted_proxies" help:"CIDRs of proxies whose X-Forwarded-For is believed (for logs)"`
	AllowInsecure bool     `key:"allow_insecure_http" help:"serve plain HTTP on a non-loopback address with an http public_url (the compose demo); not needed behind a TLS proxy, where an https public_url allows the plain hop"`
	Origins       []string `key:"allowed_origins" help:"browser origins allowed to call the endpoint"`

	IdleTimeout          time.Duration `key:"idle_timeout" help:"end a session after this long without client traffic"`
	StreamlessIdle       time.Duration `key:"streamless_idle_timeout" help:"the same, for a client that never opened a GET stream"`
	StreamLossGrace      time.Duration `key:"stream_loss_grace" help:"end a session this long after its GET stream closed"`
	MaxSessionLifetime   time.Duration `key:"max_session_lifetime" help:"end every session after this long (0 = no cap)"`
	RequestTimeout       time.Duration `key:"request_timeout" help:"cancel a call that runs longer (0 = no limit)"`
	InputRequiredTimeout time.Duration `key:"input_required_timeout" help:"how long a 2026-07-28 call that needs the client's input (a worker's elicitation, sampling or roots request) waits for the client's retry; then the worker's request gets an error"`
	MaxSessions          int           `key:"max_sessions" help:"most sessions at once; more get 503; the default is sized from the open-files limit and memory (0 lifts the cap)"`
	MaxSessionsPerUser   int           `key:"max_sessions_per_user" help:"most sessions per user; more get 429 (0 lifts the cap)"`
	WorkerStartRate      float64       `key:"worker_start_rate" help:"workers one user may start per second, after worker_start_burst; faster gets 429 (0 lifts the limit)"`
	WorkerStartBurst     int           `key:"worker_start_burst" help:"workers one user may start at once before worker_start_rate applies"`
	MaxConnections       int           `key:"max_connections" help:"most client connections at once; more get 503; the default is sized from the open-files limit (0 lifts the cap)"`
	ReadTimeout          time.Duration `key:"read_timeout" help:"a request's headers and body must arrive within this, or its connection is closed"`
	MaxCallsPerSession   int           `key:"max_calls_per_session" help:"most calls in flight on one session; more get 429 (0 = no limit)"`
	MaxBodyBytes         int64         `key:"max_body_bytes" help:"largest request body"`
	PostAnswers          string        `key:"post_answers" choices:"sse,json" help:"sse (answer as an SSE stream when the client accepts one) or json (JSON unless the worker sends related messages first)"`
	DrainDelay           time.Duration `key:"drain_delay" help:"on SIGTERM, how long /readyz answers 503 while the listener still serves, so that load balancers move traffic first (0 = off)"`
	ShutdownGrace        time.Duration `key:"shutdown_grace" help:"how long in-flight calls may finish at shutdown"`

	// gemgate dev only.
	DevIssuerListen string `key:"dev_issuer_listen" dev:"true" help:"address of the development issuer"`
	DevTLS          bool   `key:"tls" dev:"true" help:"serve HTTPS with a loopback certificate signed by a development CA, both under certs/ (made once, reused)"`
	DevJSON         bool   `key:"json" dev:"true" help:"print one JSON object with the URL and tokens once ready"`

	configFiles []string
	secretFiles []secretFile // the config files that set a secret setting, for warnings
	dev         bool         // loaded for gemgate dev, whose own settings serve ignores
	// sandboxByWorker: worker_sandbox is none because the worker kind chose it (GemStone), not
	// the operator; the log and check say why.
	sandboxByWorker bool
}

// secretFile is a config file and a secret setting it sets.
type secretFile struct{ path, key string }

// defaults are the settings before any source is read; those whose default depends on the
// worker kind stay empty until byWorker chooses them.
func defaults() Config {
	limits := limit.Defaults(limit.HostCapacity())
	return Config{
		MaxSessions:          limits.MaxSessions,
		MaxSessionsPerUser:   limits.MaxSessionsPerUser,
		WorkerStartRate:      limits.WorkerStartRate,
		WorkerStartBurst:     limits.WorkerStartBurst,
		MaxConnections:       limits.Capacity.MaxConnections(limits.MaxSessions),
		ReadTimeout:          30 * time.Second,
		Listen:               "127.0.0.1:8080",
		MCPPath:              "/mcp",
		Auth:                 "oidc",
		UserClaim:            "sub",
		MaxUserNames:         auth.DefaultMaxUserNames,
		KeyRefresh:           time.Minute,
		RequiredScopes:       []string{"mcp:use"},
		WriteScope:           "mcp:write",
		Worker:               "demo",
		OnTokenExpiry:        "keep",
		InputRequiredTimeout: 2 * time.Minute,
		WorkerIdleTimeout:    10 * time.Minute,
		MaxWorkers:           limits.MaxSessions,
		MaxCallsPerWorker:    64,
		WorkerWriteTimeout:   10 * time.Second,
		WorkerMemoryMax:      capsAuto,
		WorkerPidsMax:        capsAuto,
		WorkerCPUMax:         capsAuto,
		WorkerOpenFilesMax:   capsAuto,
		PostAnswers:          "sse",
		MaxCallsPerSession:   64,
		MetricsListen:        "127.0.0.1:9464",
		LogFormat:            "json",
		LogLevel:             "info",
		TraceLimit:           "4096",
		IdleTimeout:          30 * time.Minute,
		StreamlessIdle:       time.Minute,
		StreamLossGrace:      10 * time.Second,
		MaxBodyBytes:         4 << 20,
		DrainDelay:           5 * time.Second,
		ShutdownGrace:        10 * time.Second,
		DevIssuerListen:      "127.0.0.1:0",
	}
}

// field is one setting, reached by reflection so that the three spellings cannot drift apart.
type field struct {
	key, help string
	secret    bool
	dev       bool
	words     bool     // a list read as shell words (worker_command), not comma/space separated
	choices   []string // the only values a string setting may take (tag choices:"a,b")
	v         reflect.Value
}

func (c *Config) fields() []field {
	var out []field
	for f, v := range reflect.ValueOf(c).Elem().Fields() {
		key := f.Tag.Get("key")
		if key == "" {
			continue
		}
		var choices []string
		if ch := f.Tag.Get("choices"); ch != "" {
			choices = strings.Split(ch, ",")
		}
		out = append(out, field{key: key, help: f.Tag.Get("help"), secret: f.Tag.Get("secret") == "true", dev: f.Tag.Get("dev") == "true",
			words: f.Tag.Get("list") == "words", choices: choices, v: v})
	}
	return out
}

// settings are the fields load takes: all but gemgate dev's own unless loaded for dev.
func (c *Config) settings() []field {
	return slices.DeleteFunc(c.fields(), func(f field) bool { return f.dev && !c.dev })
}

// devOnlyHint is what serve takes instead of a setting of gemgate dev only, where it has one.
var devOnlyHint = map[string]string{"tls": " (serve takes a certificate of its own: tls_cert and tls_key)",
	"dev_issuer_listen": " (serve takes your identity provider: issuer)"}

// flagAliases are short flag spellings kept for convenience, by key: --data for --data-dir.
var flagAliases = map[string]string{"data_dir": "data"}

func flagName(key string) string { return strings.ReplaceAll(key, "_", "-") }
func envName(key string) string  { return "GEMGATE_" + strings.ToUpper(key) }

// Set parses s into the field.
func (f field) Set(s string) error {
	switch p := f.v.Addr().Interface().(type) {
	case *string:
		*p = s
	case *bool:
		b, err := strconv.ParseBool(s)
		if err != nil {
			return fmt.Errorf("%s: %q is not true or false", f.key, s)
		}
		*p = b
	case *int, *int64:
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return fmt.Errorf("%s: %q is not a whole number", f.key, s)
		}
		f.v.SetInt(n)
	case *float64:
		n, err := parseFiniteFloat(s)
		if err != nil {
			return fmt.Errorf("%s: %q is not a number", f.key, s)
		}
		*p = n
	case *time.Duration:
		d, err := time.ParseDuration(s)
		if err != nil {
			return fmt.Errorf("%s: %q is not a duration like 90s or 30m", f.key, s)
		}
		*p = d
	case *[]string:
		if !f.words {
			*p = splitList(s)
			break
		}
		words, err := splitWords(s)
		if err != nil {
			return fmt.Errorf("%s: %w (quote as in a shell, or give a YAML list)", f.key, err)
		}
		*p = words
	default:
		return fmt.Errorf("%s: unsupported type", f.key)
	}
	return nil
}

func (f field) String() string {
	if !f.v.IsValid() { // the flag package's zero value, to tell a default from none
		return ""
	}
	if v, ok := f.v.Interface().([]string); ok {
		return strings.Join(v, ",")
	}
	return fmt.Sprint(f.v.Interface())
}

// commandHelp opens the -h text of each command that takes the settings as flags.
var commandHelp = map[string]string{
	"serve": "usage: gemgate serve [flags]\n\nRun the gateway.\n",
	"dev": "usage: gemgate dev [flags]\n\nRun the gateway on loopback with a development issuer that prints tokens for alice\n" +
		"(read-write) and bob (read-only), the demo worker, and metrics on 127.0.0.1:9464 (or a\n" +
		"free port). Its keys and port are kept in the data directory, so tokens outlive a restart.\n",
	"check": "usage: gemgate check [flags]\n       gemgate check --token JWT|- [--tools FILE] [flags]\n       gemgate check --health URL\n\n" +
		"Check the configuration and what serving needs (issuer, worker, TLS files, free ports)\n" +
		"and exit 0 only when all is well. With --token, say claim by claim whether gemgate with\n" +
		"these settings would accept the token, and why not (- reads it from stdin, out of the\n" +
		"shell history); exit 0 when it would; --tools FILE (a worker's tools/list result) adds\n" +
		"which tools the token may list and call, and what decided each. With --health URL, exit 0 only when URL answers\n" +
		"200 (a container health check for images without curl).\n",
}

// commandUsage prints a command's -h text: what it does, then every setting as a flag.
func commandUsage(fs *flag.FlagSet) {
	w := fs.Output()
	fmt.Fprint(w, commandHelp[fs.Name()])
	fmt.Fprint(w, "\nSettings (every flag is also a GEMGATE_ environment variable and a config file key:\n"+
		"--stream-loss-grace, GEMGATE_STREAM_LOSS_GRACE, stream_loss_grace; see docs/configuration.md):\n\n")
	fs.PrintDefaults()
}

// IsBoolFlag makes a bool setting's flag take no value, as a field is its setting's flag.
func (f field) IsBoolFlag() bool { return f.v.Kind() == reflect.Bool }

// load fills a Config for the command name from defaults, the config file, the environment
// and the flags in args. Every problem found is returned together.
func load(name string, args []string) (*Config, error) {
	c := defaults()
	c.dev = name == "dev"
	if c.dev {
		c.LogFormat = "text"
		c.DrainDelay = 0 // one local gateway, no balancer to tell
	}
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	// The flag package prints a parse error and then the whole usage, over a hundred lines
	// that bury the error: the caller prints the error once, with a pointer to -h, and -h
	// alone prints the usage.
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	fs.Func("config", "YAML config file; repeat to layer several (later files win), e.g. a policy preset and your own", func(v string) error {
		c.configFiles = append(c.configFiles, v)
		return nil
	})
	fields := c.settings()
	for _, f := range fields {
		fs.Var(f, flagName(f.key), f.help)
		if alias, ok := flagAliases[f.key]; ok {
			fs.Var(f, alias, "same as --"+flagName(f.key))
		}
	}
	if err := refuseSecretFlags(args, fields); err != nil {
		return nil, err
	}
	// Flags first, to learn the config files; the files and the environment are then applied
	// beneath them by parsing the flags again.
	if err := fs.Parse(args); errors.Is(err, flag.ErrHelp) {
		fs.SetOutput(nil) // standard error
		commandUsage(fs)
		return nil, err
	} else if err != nil {
		return nil, fmt.Errorf("%w (gemgate %s -h lists every setting)", err, name)
	}
	if fs.NArg() > 0 {
		return nil, fmt.Errorf("unexpected arguments: %s", strings.Join(fs.Args(), " "))
	}
	flagged := map[string]bool{}
	fs.Visit(func(fl *flag.Flag) {
		if f, ok := fl.Value.(field); ok {
			flagged[f.key] = true
		}
	})
	var errs []error
	for _, f := range c.configFiles {
		errs = append(errs, c.applyFile(f)...)
	}
	for _, f := range fields {
		if v, ok := os.LookupEnv(envName(f.key)); ok && !flagged[f.key] {
			if err := f.Set(v); err != nil {
				errs = append(errs, fmt.Errorf("%s: %w", envName(f.key), err))
			}
		}
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	c.configFiles = nil // the second parse lists them again
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	c.byWorker(runningAsRoot())
	return &c, nil
}

// refuseSecretFlags refuses a secret setting given as a flag, since any account can read a
// command line (ps, /proc/<pid>/cmdline). It runs before the flag package, whose errors quote
// values, and looks at every argument with any number of dashes: "--" may be another flag's
// value, and a bad spelling ("---name=value") would be quoted whole.
func refuseSecretFlags(args []string, fields []field) error {
	for _, a := range args {
		if !strings.HasPrefix(a, "-") {
			continue
		}
		name, _, _ := strings.Cut(strings.TrimLeft(a, "-"), "=")
		for _, f := range fields {
			if f.secret && name == flagName(f.key) {
				return fmt.Errorf("--%s: a secret on the command line can be read by every account on this host (ps, /proc/<pid>/cmdline); set %s in the environment or %s in the config file instead",
					name, envName(f.key), f.key)
			}
		}
	}
	return nil
}

// applyFile applies the settings of the config file at path, and returns every problem found.
func (c *Config) applyFile(path string) []error {
	root, err := readConfigFile(path)
	if err != nil {
		return []error{err}
	}
	if root == nil {
		return nil
	}
	byKey := map[string]field{}
	for _, f := range c.settings() {
		byKey[f.key] = f
	}
	var errs []error
	seen := map[string]bool{}
	for i := 0; i+1 < len(root.Content); i += 2 {
		kn, v := root.Content[i], resolveAlias(root.Content[i+1])
		if kn.Kind != yaml.ScalarNode || kn.ShortTag() != "!!str" {
			errs = append(errs, fileError(path, "line %d: a key must be a setting's name, not an alias, a list, a mapping or a %s", kn.Line, kn.ShortTag()))
			continue
		}
		k := kn.Value
		f, ok := byKey[k]
		kind, isRules := policy.RulesKind(k)
		switch {
		case seen[k]:
			errs = append(errs, fileError(path, "%q is set twice", k))
		case isRules:
			seen[k] = true
			if c.Rules[kind], err = policy.RulesFromYAML(kind, v); err != nil {
				errs = append(errs, fileError(path, "%s: %w", k, err))
			}
		case !ok && slices.ContainsFunc(c.fields(), func(f field) bool { return f.dev && f.key == k }):
			errs = append(errs, fileError(path, "unknown setting %q: a setting of gemgate dev only%s", k, devOnlyHint[k]))
		case !ok:
			errs = append(errs, fileError(path, "unknown setting %q", k))
		default:
			seen[k] = true
			if err := f.setNode(k, v); err != nil {
				errs = append(errs, fileError(path, "%w", err))
			}
			if f.secret {
				c.secretFiles = append(c.secretFiles, secretFile{path, k})
			}
		}
	}
	return errs
}

// fileError is a problem of the config file at path.
func fileError(path, format string, a ...any) error {
	return fmt.Errorf("config file %s: "+format, append([]any{path}, a...)...)
}

// readConfigFile reads the config file at path: the mapping of its one YAML document, or nil
// when it holds none. The file is read as nodes, not decoded into Go values: a value is taken
// as the text written (0123 stays 0123, not 83; a date stays as written), as a flag would
// take it.
func readConfigFile(path string) (*yaml.Node, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("config file: %w", err)
	}
	dec := yaml.NewDecoder(bytes.NewReader(b))
	var doc yaml.Node
	if err := dec.Decode(&doc); err != nil && err != io.EOF {
		return nil, fileError(path, "%w", err)
	}
	// A second document (two files joined by "---") would be dropped without a word; an empty
	// one (a trailing "---") holds nothing to drop.
	for {
		var more yaml.Node
		err := dec.Decode(&more)
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, fileError(path, "%w", err)
		}
		if !isEmptyNode(&more) {
			return nil, fileError(path, "holds more than one YAML document; give each as its own --config (later files win)")
		}
	}
	if isEmptyNode(&doc) {
		return nil, nil
	}
	root := doc.Content[0]
	if root.Kind != yaml.MappingNode {
		return nil, fileError(path, "must be a mapping of settings (key: value)")
	}
	return root, nil
}

// setNode sets f, the setting k, from its value in the config file: a list, or one value.
func (f field) setNode(k string, v *yaml.Node) error {
	if v.Kind != yaml.SequenceNode {
		text, err := scalarText(v)
		if err != nil {
			return fmt.Errorf("%s %w; write its value, or leave the key out for its default", k, err)
		}
		return f.Set(text)
	}
	if f.v.Kind() != reflect.Slice {
		return fmt.Errorf("%s takes one value, not a list", k)
	}
	parts := make([]string, len(v.Content))
	for j, e := range v.Content {
		text, err := scalarText(resolveAlias(e))
		if err != nil {
			return fmt.Errorf("%s: entry %d %w", k, j+1, err)
		}
		parts[j] = text
	}
	if err := f.checkEntries(parts); err != nil {
		return err
	}
	f.v.Set(reflect.ValueOf(parts))
	return nil
}

// isEmptyNode reports whether a decoded document holds nothing: no content, or a bare null.
func isEmptyNode(doc *yaml.Node) bool {
	if doc.Kind == 0 || len(doc.Content) == 0 {
		return true
	}
	n := doc.Content[0]
	return n.Kind == yaml.ScalarNode && n.ShortTag() == "!!null" && n.Value == ""
}

// resolveAlias is the node an alias stands for, or n.
func resolveAlias(n *yaml.Node) *yaml.Node {
	if n.Kind == yaml.AliasNode && n.Alias != nil {
		return n.Alias
	}
	return n
}

// scalarText is the text of a plain value as written; a null, a list, a mapping or a value
// of another YAML type (!!binary, a custom tag) is refused.
func scalarText(n *yaml.Node) (string, error) {
	if n.Kind != yaml.ScalarNode {
		return "", errors.New("is a list or a mapping, not a plain value")
	}
	text := n.Value
	if n.Style&(yaml.LiteralStyle|yaml.FoldedStyle) != 0 {
		// A block scalar (| or >, as Helm's toYaml writes a long value) ends in the line
		// break YAML keeps; it is not part of the value.
		text = strings.TrimSuffix(text, "\n")
	}
	if strings.ContainsAny(text, "\r\n") {
		return "", errors.New("holds a line break; no setting does: write it on one line")
	}
	switch n.ShortTag() {
	case "!!str", "!!int", "!!float", "!!bool", "!!timestamp":
		return text, nil
	case "!!null":
		return "", errors.New("is empty (null)")
	}
	return "", fmt.Errorf("has the YAML type %s, not a plain value", n.ShortTag())
}
