//go:build linux

package worker

import (
	"bytes"
	"encoding/base64"
	"log/slog"
	"strings"
	"testing"
	"time"
)

// A worker whose HTTP client logs its requests quotes its credential in base64, inside
// "Authorization: Basic base64(user:credential)": the log has the line without it.
func TestBase64CredentialIsRedacted(t *testing.T) {
	const cred = "glpat-SECRETPART-0123456789"
	for _, user := range []string{"x-access-token", "u", "ab", "abc"} { // every offset of the credential in the encoding
		header := base64.StdEncoding.EncodeToString([]byte(user + ":" + cred))
		var logs logBuffer
		spec := Spec{Path: "/bin/sh", Args: []string{"-c", `read -r c; printf 'GET /api Authorization: Basic %s\n' '` + header + `' >&2; exec cat >/dev/null`},
			StopGrace: 200 * time.Millisecond, Logger: slog.New(slog.NewJSONHandler(&logs, nil)),
			Credential: []byte(cred), CredentialStdin: true}
		p, err := Start(spec)
		if err != nil {
			t.Fatal(err)
		}
		waitUntil(t, "the line is logged", func() bool { return strings.Contains(logs.String(), "Authorization") })
		p.Stop()
		out := logs.String()
		if !strings.Contains(out, "GET /api Authorization: Basic ") || !strings.Contains(out, "[redacted]") {
			t.Errorf("user %q: the log does not have the line, redacted:\n%s", user, out)
		}
		if strings.Contains(out, header[len(header)/2:len(header)/2+8]) {
			t.Errorf("user %q: the log holds the encoded credential %s:\n%s", user, header, out)
		}
	}
}

// Wherever a secret of 8 bytes or more sits in a longer text, and whichever base64 alphabet
// and padding encodes that text, one of the secret's encoded forms is in the encoding, and
// redacting the forms leaves nothing of the secret decodable there.
func FuzzEncodedFormsAreFoundInAnyBase64Text(f *testing.F) {
	f.Add([]byte("user:"), []byte("s3cr3t-token"), []byte(""))
	f.Add([]byte(""), []byte("\x00\xff\xfe binary secret"), []byte("tail"))
	f.Add([]byte("ab"), []byte("12345678"), []byte("c"))
	f.Fuzz(func(t *testing.T, before, secret, after []byte) {
		if len(secret) < 8 {
			return
		}
		forms := encodedForms(secret)
		text := bytes.Join([][]byte{before, secret, after}, nil)
		for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.RawStdEncoding, base64.URLEncoding, base64.RawURLEncoding} {
			e := []byte(enc.EncodeToString(text))
			if !holdsSecret(e, forms) {
				t.Fatalf("none of the forms %q of secret %q is in %s", forms, secret, e)
			}
		}
	})
}

// A secret too short for a form of minEncodedForm characters has no forms: ordinary words of
// a worker's lines are not taken out.
func TestShortSecretsHaveNoEncodedForms(t *testing.T) {
	if forms := encodedForms([]byte("abc")); len(forms) != 0 {
		t.Errorf("forms of a 3-byte secret: %q", forms)
	}
	if forms := encodedForms([]byte("password")); len(forms) == 0 {
		t.Error("an 8-byte secret has no forms")
	}
}
