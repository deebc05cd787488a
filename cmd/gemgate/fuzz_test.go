package main

import (
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
)

// FuzzConfigFile: any config file, however malformed, is either taken or refused with
// errors; never a panic, and reading the same file twice gives the same configuration.
func FuzzConfigFile(f *testing.F) {
	for _, seed := range []string{
		"issuer: https://kc.example/realms/a\nidle_timeout: 20m\n",
		"worker_command: [srv, --flag, 'two words']\nread_only_tools: [a, b]\n",
		"worker_command: \"srv 'two words' a,b\"\nrequired_scopes: mcp:use, team\n",
		"max_sessions: 3\nworker_start_rate: 0.5\ntrace_limit: none\n",
		"audiences: [\"a b\"]\n", "unknown_key: 1\n", "- just\n- a list\n", "listen: {a: b}\n", "",
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, body string) {
		path := filepath.Join(t.TempDir(), "gemgate.yaml")
		if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		read := func() (Config, int) {
			c := defaults()
			errs := c.applyFile(path)
			if len(errs) == 0 {
				c.byWorker(runningAsRoot())
				_ = c.validate() // must not panic on anything the file could hold
			}
			return c, len(errs)
		}
		a, errsA := read()
		b, errsB := read()
		if errsA != errsB || !reflect.DeepEqual(a, b) {
			t.Fatalf("the same file read twice differs: %d vs %d errors", errsA, errsB)
		}
	})
}

// FuzzListSetting: a list given as one string splits into non-empty entries holding no
// separator, and joining them back splits into the same entries; a command line either
// splits into words or is refused.
func FuzzListSetting(f *testing.F) {
	for _, seed := range []string{"mcp:use, team", "a,,b  c\td", "", " , ", "srv 'two words' \"x y\" a\\ b #c", "'unterminated"} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, s string) {
		entries := splitList(s)
		for _, e := range entries {
			if e == "" || strings.ContainsAny(e, listSeparators) {
				t.Fatalf("splitList(%q) gave entry %q", s, e)
			}
		}
		if again := splitList(strings.Join(entries, ",")); !slices.Equal(again, entries) {
			t.Fatalf("splitList(%q) = %q, but joined and split again %q", s, entries, again)
		}
		// Blank as a shell sees it: space, tab and newline (a vertical tab is a character).
		if words, err := splitWords(s); err == nil && strings.Trim(s, " \t\n\r") == "" && len(words) != 0 {
			t.Fatalf("splitWords(%q) = %q from blank input", s, words)
		}
	})
}
