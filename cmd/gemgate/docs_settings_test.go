package main

import (
	"os"
	"reflect"
	"regexp"
	"strings"
	"testing"
)

// TestConfigurationDocListsEverySetting pins the table "Every setting" of
// docs/configuration.md against Config: every setting has exactly one row and every row names
// a setting; a default written as a value (`30m`) is the code's default, one written as `–` is
// empty, and a setting of gemgate dev alone says so. A default in words (sized from the host,
// derived from another setting) is not compared. Every setting is also described in the text
// above the table.
func TestConfigurationDocListsEverySetting(t *testing.T) {
	raw, err := os.ReadFile("../../docs/configuration.md")
	if err != nil {
		t.Fatal(err)
	}
	doc := string(raw)
	const heading = "\n## Every setting\n"
	at := strings.Index(doc, heading)
	if at < 0 {
		t.Fatalf("docs/configuration.md has no section %q", strings.TrimSpace(heading))
	}
	text, table := doc[:at], doc[at+len(heading):]
	if next := strings.Index(table, "\n## "); next >= 0 {
		table = table[:next]
	}

	row := regexp.MustCompile("^\\| `([a-z_]+)` \\| (.*) \\|$")
	documented := map[string]string{}
	for _, line := range strings.Split(table, "\n") {
		m := row.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		if _, twice := documented[m[1]]; twice {
			t.Errorf("docs/configuration.md lists %s twice", m[1])
		}
		documented[m[1]] = strings.TrimSpace(m[2])
	}

	c := defaults()
	c.byWorker(false)       // as load chooses them for the demo worker and an ordinary account
	c.WorkerCredential = "" // the doc's "–": chosen by worker, not compared
	inCode := map[string]bool{}
	for _, f := range c.fields() {
		inCode[f.key] = true
		def, ok := documented[f.key]
		if !ok {
			t.Errorf("setting %s (--%s, %s) has no row in docs/configuration.md, \"Every setting\"", f.key, flagName(f.key), envName(f.key))
			continue
		}
		if !strings.Contains(text, "`"+f.key+"`") {
			t.Errorf("setting %s is in the table of docs/configuration.md but described nowhere above it", f.key)
		}
		if devOnly := strings.Contains(def, "(`gemgate dev` only)"); devOnly != f.dev {
			t.Errorf("%s: the row says dev only %v, the code %v: %s", f.key, devOnly, f.dev, def)
		}
		switch {
		case strings.HasPrefix(def, "–"):
			if got := f.String(); got != "" {
				t.Errorf("%s: the doc says it is empty by default, the code's default is %q", f.key, got)
			}
		case strings.HasPrefix(def, "`"):
			value, _, _ := strings.Cut(def[1:], "`")
			var probe Config
			for _, p := range probe.fields() {
				if p.key != f.key {
					continue
				}
				if err := p.Set(value); err != nil {
					t.Errorf("%s: the documented default %q does not parse: %v", f.key, value, err)
				} else if !reflect.DeepEqual(p.v.Interface(), f.v.Interface()) {
					t.Errorf("%s: the doc's default is %q, the code's is %q", f.key, value, f.String())
				}
			}
		}
	}
	for key := range documented {
		if !inCode[key] {
			t.Errorf("docs/configuration.md lists %s, which is no setting of gemgate", key)
		}
	}
}
