package policy

import "testing"

// ReadsAnnotations is true exactly when a tool rule's allow reads the annotations variable,
// however it reaches it.
func TestReadsAnnotations(t *testing.T) {
	for _, tc := range []struct {
		allow string
		want  bool
	}{
		{`"staff" in groups`, false},
		{`tool.startsWith("annotations")`, false},
		{`annotations.openWorldHint || "staff" in groups`, true},
		{`has(annotations.readOnlyHint)`, true},
		{`annotations.exists(k, annotations[k]) || read_only`, true},
	} {
		p, err := New(Config{TrustReadOnlyHints: true, Rules: []Rule{{Allow: tc.allow}}})
		if err != nil {
			t.Fatal(err)
		}
		if got := p.ReadsAnnotations(); got != tc.want {
			t.Errorf("%s: ReadsAnnotations %v, want %v", tc.allow, got, tc.want)
		}
	}
	p, err := New(Config{PromptRules: []Rule{{Allow: `"staff" in groups`}}})
	if err != nil {
		t.Fatal(err)
	}
	if p.ReadsAnnotations() {
		t.Error("a prompt rule reads annotations")
	}
}
