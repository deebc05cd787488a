package main

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// worker_command in a flag or the environment is a command line read as shell words: a comma
// is an ordinary character and quotes keep an argument whole.
func TestWorkerCommandIsShellWords(t *testing.T) {
	for _, tc := range []struct {
		name, line string
		want       []string
	}{
		{"plain", "my-mcp-server --stdio", []string{"my-mcp-server", "--stdio"}},
		{"comma inside an argument", "srv --tools read,write", []string{"srv", "--tools", "read,write"}},
		{"single quotes", "srv 'two words' {user}", []string{"srv", "two words", "{user}"}},
		{"double quotes and escapes", `srv "say \"hi\"" a\ b`, []string{"srv", `say "hi"`, "a b"}},
		{"nothing expanded", "srv $HOME ~ * {a,b}", []string{"srv", "$HOME", "~", "*", "{a,b}"}},
		{"quoted hash", "srv '#fff'", []string{"srv", "#fff"}},
		{"hash inside a word", "srv a#b", []string{"srv", "a#b"}},
	} {
		t.Run(tc.name+"/flag", func(t *testing.T) {
			c, err := load("serve", []string{"--worker-command", tc.line})
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, c.WorkerCommand); diff != "" {
				t.Errorf("worker_command (-want +got):\n%s", diff)
			}
		})
		t.Run(tc.name+"/environment", func(t *testing.T) {
			t.Setenv("GEMGATE_WORKER_COMMAND", tc.line)
			c, err := load("serve", nil)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, c.WorkerCommand); diff != "" {
				t.Errorf("worker_command (-want +got):\n%s", diff)
			}
		})
	}
}

// A command line that a shell would read differently from what was written is refused, not
// guessed at.
func TestWorkerCommandRefusesIncompleteLines(t *testing.T) {
	for _, line := range []string{"srv 'unterminated", `srv "unterminated`, `srv \`, "srv #comment"} {
		_, err := load("serve", []string{"--worker-command", line})
		if err == nil || !strings.Contains(err.Error(), "worker_command") {
			t.Errorf("%q: want a worker_command error, got %v", line, err)
		}
	}
}

// The YAML list is the unambiguous spelling: every entry is one argument, whatever it holds.
// A plain YAML string is read like the flag.
func TestWorkerCommandInTheFile(t *testing.T) {
	list := writeFile(t, "list.yaml", "worker_command: [\"/opt/srv\", \"--tools\", \"read,write\", \"two words\", \"it's\", \"{user}\"]\n")
	c, err := load("serve", []string{"--config", list})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"/opt/srv", "--tools", "read,write", "two words", "it's", "{user}"}, c.WorkerCommand); diff != "" {
		t.Errorf("from a YAML list (-want +got):\n%s", diff)
	}
	str := writeFile(t, "string.yaml", "worker_command: /opt/srv --tools read,write 'two words'\n")
	c, err = load("serve", []string{"--config", str})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"/opt/srv", "--tools", "read,write", "two words"}, c.WorkerCommand); diff != "" {
		t.Errorf("from a YAML string (-want +got):\n%s", diff)
	}
}

// Every other list setting is separated by commas and/or white space in flags and the
// environment; its values can never hold a separator, so a YAML list entry that does is
// refused rather than accepted in one spelling and split in the other.
func TestOtherListsRefuseEntriesHoldingASeparator(t *testing.T) {
	c := defaults()
	var lists []string
	for _, f := range c.fields() {
		if _, ok := f.v.Interface().([]string); ok && !f.words {
			lists = append(lists, f.key)
		}
	}
	if len(lists) < 6 {
		t.Fatalf("found only these list settings: %v", lists)
	}
	for _, key := range lists {
		t.Run(key, func(t *testing.T) {
			flag := "--" + flagName(key)
			c, err := load("serve", []string{flag, "a, b\tc  d,,e"})
			if err != nil {
				t.Fatal(err)
			}
			got := c.fieldValue(key)
			if diff := cmp.Diff([]string{"a", "b", "c", "d", "e"}, got); diff != "" {
				t.Errorf("%s split (-want +got):\n%s", flag, diff)
			}
			for _, entry := range []string{"a,b", "a b", ""} {
				file := writeFile(t, "f.yaml", key+": [ok, \""+entry+"\"]\n")
				if _, err := load("serve", []string{"--config", file}); err == nil || !strings.Contains(err.Error(), key) {
					t.Errorf("YAML entry %q: want an error naming %s, got %v", entry, key, err)
				}
			}
			file := writeFile(t, "f.yaml", key+": [one, two]\n")
			c, err = load("serve", []string{"--config", file})
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff([]string{"one", "two"}, c.fieldValue(key)); diff != "" {
				t.Errorf("YAML list (-want +got):\n%s", diff)
			}
		})
	}
}

// fieldValue is the []string value of the setting key.
func (c *Config) fieldValue(key string) []string {
	for _, f := range c.fields() {
		if f.key == key {
			return f.v.Interface().([]string)
		}
	}
	return nil
}
