package policy

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
)

func TestRealisticToolsList(t *testing.T) {
	in := realisticToolsList(200)
	if !json.Valid(in) {
		t.Fatal("benchmark input is not valid JSON")
	}
	p := mustNew(t, Config{ReadOnlyTools: []string{"list_*", "find_*"}})
	out, hints, _, err := p.FilterList("tools/list", decide(p, []string{"mcp:use"}), in)
	if err != nil {
		t.Fatal(err)
	}
	var got struct {
		Tools []struct {
			Name string `json:"name"`
		} `json:"tools"`
		NextCursor string `json:"nextCursor"`
	}
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatal(err)
	}
	if len(got.Tools) != 50 || got.NextCursor != "page-2" {
		t.Errorf("kept %d tools, cursor %q; want 50, page-2", len(got.Tools), got.NextCursor)
	}
	if len(hints) != 150 {
		t.Errorf("got %d hints, want 150", len(hints))
	}
}

func BenchmarkFilterToolsList(b *testing.B) {
	in := realisticToolsList(200)
	p := mustNew(b, Config{ReadOnlyTools: []string{"list_*", "find_*", "get_thing_001"}, Rules: []Rule{{Scope: "admin", Tools: []string{"remove_*"}}}})
	for _, bc := range []struct {
		name   string
		scopes []string
	}{
		{"read-only", []string{"mcp:use"}},
		{"read-write", []string{"mcp:use", "mcp:write", "admin"}},
	} {
		a := decide(p, bc.scopes)
		b.Run(bc.name, func(b *testing.B) {
			b.SetBytes(int64(len(in)))
			b.ReportAllocs()
			for b.Loop() {
				if _, _, _, err := p.FilterList("tools/list", a, in); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkFilterResourcesList filters a resources/list of 10,000 resources by three resource
// rules (a glob, a name, an allow expression); each URI is decided on in every reading
// (uriReadings). "long" URIs are 2 KiB, with a query, a fragment, percent-encodings and
// characters a WHATWG reader encodes: six readings each.
func BenchmarkFilterResourcesList(b *testing.B) {
	p := mustNew(b, Config{ExtraScopes: []string{"hr:read"}, ResourceRules: []Rule{
		{Name: "hr-files", URIs: []string{"file:///hr/*"}, Scope: "hr:read"},
		{Name: "audit", URIs: []string{"log://audit"}, Scope: "hr:read"},
		{Name: "hr-tree", Allow: `!uri.startsWith("file:///hr/") || "hr:read" in scopes`},
	}})
	a := decide(p, []string{"mcp:use"})
	for _, bc := range []struct {
		name string
		uri  func(i int) string
	}{
		{"short", func(i int) string { return fmt.Sprintf("file:///docs/file-%05d.txt", i) }},
		{"long", func(i int) string {
			return fmt.Sprintf("file:///docs/%05d/%s a%%20b \u00e9?q=%s#%s", i, strings.Repeat("x", 1900), strings.Repeat("y", 40), strings.Repeat("z", 40))
		}},
	} {
		var buf bytes.Buffer
		buf.WriteString(`{"resources":[`)
		for i := range 10000 {
			if i > 0 {
				buf.WriteByte(',')
			}
			u := bc.uri(i)
			if i%10 == 0 {
				u = fmt.Sprintf("file:///hr/pay-%05d.txt", i)
			}
			fmt.Fprintf(&buf, `{"uri":%q,"name":"r%d","mimeType":"text/plain"}`, u, i)
		}
		buf.WriteString(`]}`)
		in := buf.Bytes()
		if why := uriRefusal(bc.uri(1)); why != "" {
			b.Fatalf("%q: refused: %s", bc.uri(1), why)
		}
		b.Logf("%s: %d readings, %d bytes", bc.name, len(uriReadings(bc.uri(1))), len(in))
		b.Run(bc.name, func(b *testing.B) {
			b.SetBytes(int64(len(in)))
			b.ReportAllocs()
			for b.Loop() {
				if _, _, _, err := p.FilterList("resources/list", a, in); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
