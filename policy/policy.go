package policy

import (
	"cmp"
	"errors"
	"fmt"
	"path"
	"slices"
	"strings"
)

// offlineAccess is the refresh-token scope. A resource must not ask for it (refresh tokens
// are the client's business), so gemgate advertises it only when the operator lists it in
// ExtraScopes, which some authorization servers need before a dynamically registered
// client may hold it.
const offlineAccess = "offline_access"

// Config is what the operator configures. Zero values mean the documented defaults; New
// copies it and never changes the caller's slices.
type Config struct {
	// RequiredScopes must all be granted to use gemgate at all. Empty means ["mcp:use"].
	RequiredScopes []string
	// WriteScope makes a session read-write; without it the session is read-only.
	// Empty means "mcp:write".
	WriteScope string
	// ExtraScopes are advertised to clients but not checked, for scopes the
	// authorization server needs (such as "profile").
	ExtraScopes []string
	// ReadOnlyTools are the tool names and path.Match globs vouched safe for read-only
	// sessions. A glob's * does not match "/".
	ReadOnlyTools []string
	// TrustReadOnlyHints lets a worker's readOnlyHint: true annotation vouch for a tool in
	// read-only sessions. Off by default: the annotation is the worker's claim, not the
	// operator's.
	TrustReadOnlyHints bool
	// Rules restrict tools further; PromptRules and ResourceRules restrict prompts and
	// resources (which read-only sessions otherwise keep: reading is not a change). See [Rule].
	Rules, PromptRules, ResourceRules []Rule
}

// Policy is a validated Config. It is immutable and safe for concurrent use.
type Policy struct {
	required      []string
	write         string
	supported     []string
	readOnlyTools matcher
	trustHints    bool
	rules         [Kinds][]rule // by kind
}

// New validates c and fills in defaults. It reports every problem at once, joined with
// errors.Join.
func New(c Config) (*Policy, error) {
	required := c.RequiredScopes
	if len(required) == 0 {
		required = []string{"mcp:use"}
	}
	write := cmp.Or(c.WriteScope, "mcp:write")

	var errs []error
	bad := func(format string, args ...any) {
		errs = append(errs, fmt.Errorf("policy: "+format, args...))
	}

	for i, s := range required {
		if err := checkScope(s); err != nil {
			bad("required_scopes[%d] %q: %v", i, s, err)
		} else if s == offlineAccess {
			bad("required_scopes[%d]: %s is not a resource scope; list it in extra_scopes if clients must request it", i, s)
		}
	}
	if err := checkScope(write); err != nil {
		bad("write_scope %q: %v", write, err)
	} else if write == offlineAccess {
		bad("write_scope: %s is not a resource scope", write)
	}
	if slices.Contains(required, write) {
		bad("write_scope %q is also a required scope, so no session could be read-only", write)
	}
	for i, s := range c.ExtraScopes {
		if err := checkScope(s); err != nil {
			bad("extra_scopes[%d] %q: %v", i, s, err)
		}
	}
	for i, pat := range c.ReadOnlyTools {
		if err := checkPattern(pat); err != nil {
			bad("read_only_tools[%d] %q: %v", i, pat, err)
		}
	}
	var rules [Kinds][]rule
	supported := slices.Concat(required, []string{write}, c.ExtraScopes)
	for k, list := range [Kinds][]Rule{c.Rules, c.PromptRules, c.ResourceRules} {
		env, err := ruleEnv(Kind(k), c.TrustReadOnlyHints)
		if err != nil {
			return nil, err
		}
		rules[k] = make([]rule, len(list))
		for i, r := range list {
			var rerrs []error
			rules[k][i], rerrs = compileRule(env, Kind(k), i, r)
			errs = append(errs, rerrs...)
			if r.Scope != "" {
				supported = append(supported, r.Scope)
			}
		}
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	slices.Sort(supported)
	return &Policy{
		required:      dedup(required),
		write:         write,
		supported:     slices.Compact(supported),
		readOnlyTools: newMatcher(c.ReadOnlyTools),
		trustHints:    c.TrustReadOnlyHints,
		rules:         rules,
	}, nil
}

// RequiredScopes returns the scopes every token must carry, in configured order.
func (p *Policy) RequiredScopes() []string { return slices.Clone(p.required) }

// WriteScope returns the scope that makes a session read-write.
func (p *Policy) WriteScope() string { return p.write }

// ScopesSupported returns what gemgate advertises in its metadata and challenges: the
// required, write, extra and rule scopes, sorted and without duplicates. It is derived,
// so a required scope is always advertised and the write scope always requestable.
func (p *Policy) ScopesSupported() []string { return slices.Clone(p.supported) }

// checkScope accepts a scope token as RFC 6749 §3.3 defines it: one or more printable
// ASCII characters other than space, '"' and '\'.
func checkScope(s string) error {
	if s == "" {
		return errors.New("empty scope")
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < 0x21 || c > 0x7e || c == '"' || c == '\\' {
			return fmt.Errorf("invalid character %q in scope", c)
		}
	}
	return nil
}

func checkPattern(pat string) error {
	if strings.TrimSpace(pat) == "" {
		return errors.New("empty tool pattern")
	}
	if _, err := path.Match(pat, ""); err != nil {
		return errors.New("bad glob pattern")
	}
	return nil
}

// dedup returns s without repeats, keeping the first of each in order.
func dedup(s []string) []string {
	out := make([]string, 0, len(s))
	for _, v := range s {
		if !slices.Contains(out, v) {
			out = append(out, v)
		}
	}
	return out
}
