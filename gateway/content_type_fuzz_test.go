package gateway

import (
	"mime"
	"strings"
	"testing"
)

// FuzzContentTypeStricterThanEveryReader: a Content-Type gemgate takes for JSON is
// application/json, UTF-8 if a charset is named, both to mime.ParseMediaType and to a reader
// that splits the parameters at every ';' and trims each side of '=' and its quotes.
func FuzzContentTypeStricterThanEveryReader(f *testing.F) {
	for _, s := range []string{
		"application/json", "application/json; charset=utf-8", `application/json; charset="UTF-8"`,
		"application/json; charset=utf-16", `application/json; x="; charset=utf-16; y="`,
		"application/json; charset*=utf-8''utf-8", "application/json;q=0;q=1", "text/plain",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, ct string) {
		if !contentTypeJSON(ct) {
			return
		}
		mt, ps, err := mime.ParseMediaType(ct)
		if err != nil || mt != mediaJSON {
			t.Fatalf("%q: taken for JSON; mime reads %q, %v", ct, mt, err)
		}
		if cs, ok := ps["charset"]; ok && !strings.EqualFold(cs, "utf-8") {
			t.Fatalf("%q: taken for JSON; mime reads charset %q", ct, cs)
		}
		_, params, _ := strings.Cut(ct, ";")
		for _, p := range strings.Split(params, ";") {
			name, value, _ := strings.Cut(p, "=")
			name = strings.ToLower(strings.TrimSpace(name))
			value = strings.Trim(strings.TrimSpace(value), `"`)
			if (name == "charset" || strings.HasPrefix(name, "charset*")) && !strings.EqualFold(value, "utf-8") {
				t.Fatalf("%q: taken for JSON; a reader splitting at ';' sees %s=%s", ct, name, value)
			}
		}
	})
}
