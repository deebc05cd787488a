//go:build linux

package worker

import (
	"encoding/json"
	"log/slog"
	"reflect"
	"strings"
	"testing"
	"time"
)

// A worker that quotes its credential inside a JSON string its encoder escaped ("/" as "\/",
// as PHP's json_encode writes it, or a character as \u00XX): the line is traced and logged
// with the credential taken out all the same.
func TestEscapedCredentialIsRedacted(t *testing.T) {
	const cred = "AbC/opaque+token/SECRETPART=="
	for name, line := range map[string]string{
		`\/`:     `{"jsonrpc":"2.0","id":"x","result":{"login":"AbC\/opaque+token\/SECRETPART=="}}`,
		`\u002b`: `{"jsonrpc":"2.0","id":"x","result":{"login":"AbC/opaque\u002btoken/SECRETPART=="}}`,
	} {
		t.Run(name, func(t *testing.T) {
			var logs, trace logBuffer
			spec := Spec{Path: "/bin/sh", Args: []string{"-c", `read -r c; printf '%s\n' '` + line + `'; exec cat >/dev/null`},
				StopGrace: 200 * time.Millisecond, Logger: slog.New(slog.NewJSONHandler(&logs, nil)),
				Credential: []byte(cred), CredentialStdin: true,
				OnTrace: func(_ string, l []byte) { trace.Write(append(l, '\n')) }}
			p, err := Start(spec)
			if err != nil {
				t.Fatal(err)
			}
			defer p.Stop()
			waitUntil(t, "the line is logged", func() bool { return strings.Contains(logs.String(), "never sent") })
			for what, out := range map[string]string{"trace": trace.String(), "log": logs.String()} {
				if strings.Contains(out, "SECRETPART") {
					t.Errorf("the %s holds the escaped credential:\n%s", what, out)
				}
			}
			if !strings.Contains(trace.String(), `"login":"[redacted]"`) {
				t.Errorf("the trace does not have the line, redacted:\n%s", trace.String())
			}
		})
	}
}

// unescapeASCII changes how a line is written, never what it says: any JSON text decodes to
// the same value before and after. An escaped backslash never starts an escape of its own.
func FuzzUnescapeASCIIKeepsTheJSON(f *testing.F) {
	for _, s := range []string{`{"a":"x\/y\u002bz"}`, `"\\u0041"`, `"\u0022\u005c\u0041"`, `["\u00e9\u0001",1]`, `"\u12"`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		var before, after any
		if json.Unmarshal(b, &before) != nil {
			return
		}
		out := unescapeASCII(b)
		if err := json.Unmarshal(out, &after); err != nil {
			t.Fatalf("%q became %q, which is not JSON: %v", b, out, err)
		}
		if !reflect.DeepEqual(before, after) {
			t.Fatalf("%q became %q: %v, not %v", b, out, after, before)
		}
	})
}

func TestUnescapeASCII(t *testing.T) {
	for in, want := range map[string]string{
		`a\/b`:         `a/b`,
		`\u002b\u002B`: `++`,
		`\\u002b`:      `\\u002b`, // an escaped backslash, then text
		`\u0022\u005c`: `\u0022\u005c`,
		`\u00e9\u001f`: `\u00e9\u001f`,
		`\n\t\u12`:     `\n\t\u12`,
		`tail\`:        `tail\`,
	} {
		if got := string(unescapeASCII([]byte(in))); got != want {
			t.Errorf("unescapeASCII(%q) = %q, want %q", in, got, want)
		}
	}
}
