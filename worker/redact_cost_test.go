//go:build linux

package worker

import (
	"strings"
	"testing"
)

// With tracing on every line a worker writes is redacted, its answers too: a line that holds
// no secret and no escape costs a search per spelling and allocates nothing. The base64 forms
// of the secrets are made once per worker, not per line (a 900-byte token's six forms were
// about 15 KB and 16 allocations on each line).
func TestRedactingAnOrdinaryLineAllocatesNothing(t *testing.T) {
	cred := []byte("eyJhbGciOiJSUzI1NiJ9." + strings.Repeat("eyJzdWIiOiJhbGljZSJ9", 40) + ".c2lnbmF0dXJl")
	p := &Process{secrets: secretSpellings(cred, nil)}
	line := []byte(`{"jsonrpc":"2.0","id":7,"result":{"content":[{"type":"text","text":"42 notes found"}]}}`)
	if got := p.Redacted(line); string(got) != string(line) {
		t.Fatalf("a line without the secret changed: %s", got)
	}
	if n := testing.AllocsPerRun(200, func() { p.Redacted(line) }); n > 0 {
		t.Errorf("redacting a worker's ordinary answer (no secret, no escape) allocates %.0f times per line; "+
			"with tracing on it runs on every stdout line", n)
	}
}
