//go:build linux

package worker

import (
	"context"
	"encoding/base64"
	"fmt"
	"log/slog"
	"net/url"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"
)

// rawLog records each log record as its message and its attributes' values, written out as
// they are (no JSON or text quoting), so that a test can look for worker text in them.
type rawLog struct {
	mu      sync.Mutex
	records []string
}

func (l *rawLog) Enabled(context.Context, slog.Level) bool { return true }

func (l *rawLog) Handle(_ context.Context, r slog.Record) error {
	var b strings.Builder
	b.WriteString(r.Message)
	r.Attrs(func(a slog.Attr) bool {
		fmt.Fprintf(&b, " %s=%s", a.Key, a.Value.Resolve().String())
		return true
	})
	l.mu.Lock()
	defer l.mu.Unlock()
	l.records = append(l.records, b.String())
	return nil
}

func (l *rawLog) WithAttrs([]slog.Attr) slog.Handler { return l }
func (l *rawLog) WithGroup(string) slog.Handler      { return l }

func (l *rawLog) all() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.records...)
}

// spelling is one way a worker may print a secret, and the text of it that must not reach
// gemgate's log or trace.
type spelling struct {
	name, line, core string
}

// spellingsOf are the ways a worker prints secret s that gemgate knows to redact, written
// here from the encodings themselves, not from redact.go: as it is, in base64 (standard and
// URL alphabet, padded, at each offset in a longer text, and with "/" JSON-escaped), percent-
// encoded (query and path escaping, upper- and lower-case hex) and JSON-escaped (every
// character as \u00XX, "/" as "\/", and JSON within JSON).
func spellingsOf(s string) []spelling {
	out := []spelling{{"plain", "login " + s, s}}
	for _, enc := range []struct {
		name string
		e    *base64.Encoding
	}{{"base64", base64.StdEncoding}, {"base64url", base64.URLEncoding}} {
		for _, prefix := range []string{"", "u", "us"} { // the secret at each offset of the text
			e := enc.e.EncodeToString([]byte(prefix + s + "!"))
			// The characters of e that encode bytes of s alone.
			from, to := (8*len(prefix)+5)/6, 8*(len(prefix)+len(s))/6
			out = append(out, spelling{fmt.Sprintf("%s after %d bytes", enc.name, len(prefix)), "Authorization: Basic " + e, e[from:to]})
		}
	}
	// Base64 inside a JSON string whose encoder escapes "/", at the first offset where the
	// secret's own characters have one.
	for _, prefix := range []string{"", "u", "us"} {
		e := base64.StdEncoding.EncodeToString([]byte(prefix + s))
		from, to := (8*len(prefix)+5)/6, 8*(len(prefix)+len(s))/6
		if strings.Contains(e[from:to], "/") {
			out = append(out, spelling{"base64 with \\/", `{"auth":"` + strings.ReplaceAll(e, "/", `\/`) + `"}`, strings.ReplaceAll(e[from:to], "/", `\/`)})
			break
		}
	}
	lowerHex := regexp.MustCompile(`%[0-9A-F]{2}`)
	for _, p := range []struct{ name, e string }{{"query", url.QueryEscape(s)}, {"path", url.PathEscape(s)}} {
		out = append(out, spelling{p.name + " escaped", "GET /cb?x=" + p.e, p.e},
			spelling{p.name + " escaped, lower-case hex", "GET /cb?x=" + lowerHex.ReplaceAllStringFunc(p.e, strings.ToLower), lowerHex.ReplaceAllStringFunc(p.e, strings.ToLower)})
	}
	var u strings.Builder
	for _, c := range []byte(s) {
		fmt.Fprintf(&u, `\u%04x`, c)
	}
	out = append(out,
		spelling{`\u00XX`, `{"login":"` + u.String() + `"}`, u.String()},
		spelling{`\/`, `{"login":"` + strings.ReplaceAll(s, "/", `\/`) + `"}`, strings.ReplaceAll(s, "/", `\/`)},
		spelling{"JSON in JSON", `{"text":"{\"login\":\"` + strings.ReplaceAll(u.String(), `\`, `\\`) + `\"}"}`, strings.ReplaceAll(u.String(), `\`, `\\`)})
	return out
}

// A worker's secrets are its credential and every one of Spec.Secrets (a credential in its
// environment), and each is redacted in every spelling: a worker that prints each spelling
// of each, on stdout and on stderr, gets none of them into gemgate's log or trace. Each
// secret's base64 has "+" and "/", so the two alphabets differ, and a space, so the query
// and path escapings differ.
func TestEverySecretIsRedactedInEverySpelling(t *testing.T) {
	const cred = "cred pass/word?~>x"
	secrets := []string{"db pass/word?~>x", "ssh-key ~~>??/0"}
	type printed struct {
		secret string
		spelling
	}
	var lines []printed
	for _, s := range append([]string{cred}, secrets...) {
		for _, sp := range spellingsOf(s) {
			if strings.Contains(sp.line, "\n") {
				t.Fatalf("spelling %s of %q spans lines", sp.name, s)
			}
			lines = append(lines, printed{s, sp})
		}
	}
	args := []string{"-c", `for l do printf '%s\n' "$l"; printf '%s\n' "$l" >&2; done; exec cat >/dev/null`, "sh"}
	for _, l := range lines {
		args = append(args, l.line)
	}
	var logs rawLog
	var mu sync.Mutex
	var trace []string
	spec := Spec{Path: "/bin/sh", Args: args, StopGrace: 200 * time.Millisecond, Logger: slog.New(&logs),
		Credential: []byte(cred), CredentialStdin: true,
		OnTrace: func(_ string, l []byte) {
			mu.Lock()
			defer mu.Unlock()
			trace = append(trace, string(l))
		}}
	for _, s := range secrets {
		spec.Secrets = append(spec.Secrets, []byte(s))
	}
	p, err := Start(spec)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Stop()
	traced := func() []string {
		mu.Lock()
		defer mu.Unlock()
		return append([]string(nil), trace...)
	}
	count := func(records []string, prefix string) (n int) {
		for _, r := range records {
			if strings.HasPrefix(r, prefix) {
				n++
			}
		}
		return n
	}
	// Every line is logged twice (stdout and stderr), well within the worker's log burst.
	waitUntil(t, "every line is logged and traced", func() bool {
		return len(traced()) == len(lines) && count(logs.all(), "worker stderr ") == len(lines) &&
			count(logs.all(), "worker stdout line is not JSON-RPC") == len(lines)
	})
	p.Stop()
	records := logs.all()
	// Every line came through, each with its secret taken out.
	quoting := traced()
	for _, r := range records {
		if strings.HasPrefix(r, "worker stderr ") || strings.HasPrefix(r, "worker stdout line is not JSON-RPC") {
			quoting = append(quoting, r)
		}
	}
	for _, r := range quoting {
		if !strings.Contains(r, "[redacted]") && !strings.Contains(r, nestedSecret) {
			t.Errorf("a line came through without [redacted]: %s", r)
		}
	}
	for _, l := range lines {
		for what, out := range map[string][]string{"trace": traced(), "log": records} {
			for _, r := range out {
				if strings.Contains(r, l.core) {
					t.Errorf("secret %q spelled %s (%s) is in gemgate's %s: %s", l.secret, l.name, l.core, what, r)
				}
			}
		}
	}
}
