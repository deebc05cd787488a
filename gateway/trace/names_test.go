package trace

import (
	"strings"
	"testing"
)

// credentialWords are the names whose values gemgate has always redacted, split into words.
var credentialWords = [][]string{
	{"token"}, {"access", "token"}, {"refresh", "token"}, {"id", "token"}, {"bearer"},
	{"password"}, {"passwd"}, {"secret"}, {"client", "secret"}, {"authorization"},
	{"credential"}, {"credentials"}, {"api", "key"}, {"private", "key"}, {"cookie"},
	{"set", "cookie"}, {"session", "token"}, {"auth", "token"}, {"subject", "token"},
	{"assertion"},
}

// spellings are words joined by every separator the rule ignores, in every case style.
func spellings(words []string) []string {
	title := func(w string) string { return strings.ToUpper(w[:1]) + w[1:] }
	var out []string
	for _, sep := range []string{"", "_", "-", "__", "-_", "_-_"} {
		for _, style := range []func(int, string) string{
			func(_ int, w string) string { return w },
			func(_ int, w string) string { return strings.ToUpper(w) },
			func(_ int, w string) string { return title(w) },
			func(i int, w string) string { // camelCase
				if i == 0 {
					return w
				}
				return title(w)
			},
			func(i int, w string) string { // every other letter upper
				b := []byte(w)
				for j := range b {
					if (i+j)%2 == 1 {
						b[j] = b[j] - 'a' + 'A'
					}
				}
				return string(b)
			},
		} {
			parts := make([]string, len(words))
			for i, w := range words {
				parts[i] = style(i, w)
			}
			out = append(out, strings.Join(parts, sep), "_"+strings.Join(parts, sep)+"-")
		}
	}
	return out
}

// TestCredentialNamesEverySpelling: every name redacted before is redacted in JSON keys and
// form fields whatever its case and '_' or '-' in it, also after a prefix when it ends in
// token, secret, password, apikey or credential(s); progressToken never is.
func TestCredentialNamesEverySpelling(t *testing.T) {
	check := func(name string, want bool) {
		t.Helper()
		if got := isCredentialName(name); got != want {
			t.Errorf("isCredentialName(%q) = %v, want %v", name, got, want)
		}
		in := `{"` + name + `":"S3CR3T","n":1}`
		if got := strings.Contains(string(redact([]byte(in))), "S3CR3T"); got == want {
			t.Errorf("redact(%s) = %s", in, redact([]byte(in)))
		}
		if !want {
			return
		}
		if got := string(redact([]byte("a=1&" + name + "=S3CR3T"))); strings.Contains(got, "S3CR3T") {
			t.Errorf("redact(a=1&%s=S3CR3T) = %s", name, got)
		}
	}
	n := 0
	for _, words := range credentialWords {
		suffixed := strings.HasSuffix(words[len(words)-1], "token") ||
			strings.HasSuffix(words[len(words)-1], "secret") || words[len(words)-1] == "password" ||
			words[len(words)-1] == "credential" || words[len(words)-1] == "credentials" ||
			len(words) == 2 && words[0] == "api"
		for _, s := range spellings(words) {
			check(s, true)
			n++
			if suffixed {
				for _, prefix := range []string{"x", "My_", "oauth2-", "Upstream"} {
					check(prefix+s, true)
					n++
				}
			}
		}
	}
	for _, s := range spellings([]string{"progress", "token"}) {
		check(s, false)
	}
	for _, s := range []string{"nextCursor", "tokens", "secretary", "keys", "bearerish", "xbearer", "cookies"} {
		check(s, false)
	}
	if n < 1000 {
		t.Fatalf("only %d spellings checked", n)
	}
}
