package auth

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/url"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// b64token is RFC 6750 §2.1's token syntax.
var b64token = regexp.MustCompile(`^[A-Za-z0-9\-._~+/]+=*$`)

// bearerHeader is the header RFC 6750 §2.1 and RFC 7235 describe: "Bearer" (any case), 1*SP,
// the token; with HTTP's optional white space (SP, HTAB) around the value.
var bearerHeader = regexp.MustCompile(`^[ \t]*(?i:bearer) +([A-Za-z0-9\-._~+/]+=*)[ \t]*$`)

// FuzzBearerToken: BearerToken never panics, and a token it returns came from the single
// Authorization header of a request without access_token in its query, after a "Bearer"
// scheme and one or more spaces (as HAProxy's http_auth_bearer reads it), in RFC 6750
// b64token syntax, with nothing but HTTP's white space around the whole.
func FuzzBearerToken(f *testing.F) {
	f.Add("Bearer abc.def.ghi", "", "", false)
	f.Add("bearer  abc", "x=1", "", false)
	f.Add("Basic dXNlcjpwYXNz", "", "", false)
	f.Add("Bearer abc", "access_token=abc", "", false)
	f.Add("Bearer abc", "", "Bearer def", true)
	f.Add("Bearer\ta b", "", "", false)
	f.Add("Bearer ", "", "", false)
	f.Add("Bearer abc==", "", "", false)
	f.Fuzz(func(t *testing.T, header, rawQuery, second string, two bool) {
		r := &http.Request{Header: http.Header{}, URL: &url.URL{RawQuery: rawQuery}}
		r.Header.Add("Authorization", header)
		if two {
			r.Header.Add("Authorization", second)
		}
		tok, err := BearerToken(r)
		if err != nil {
			return
		}
		if two {
			t.Fatal("accepted a request with two Authorization headers")
		}
		if r.URL.Query().Has("access_token") {
			t.Fatal("accepted a request with access_token in the query")
		}
		if !b64token.MatchString(tok) {
			t.Fatalf("token %q is not RFC 6750 b64token syntax", tok)
		}
		if !bearerHeader.MatchString(header) || bearerHeader.FindStringSubmatch(header)[1] != tok {
			t.Fatalf("header %q gave token %q", header, tok)
		}
	})
}

// Fixed configuration for FuzzClaims.
const (
	fuzzIssuer   = "https://issuer.example/realms/team"
	fuzzResource = "https://gw.example.com/mcp"
)

var fuzzNow = time.Unix(1_700_000_000, 0)

// FuzzClaims: the strict claims reader never panics, and whenever it accepts a payload
// the principal's fields are what a plain encoding/json decode of that payload says.
func FuzzClaims(f *testing.F) {
	good := map[string]any{"iss": fuzzIssuer, "aud": fuzzResource, "sub": "u1", "preferred_username": "alice",
		"scope": "mcp:use mcp:write", "exp": 1_700_003_600, "iat": 1_700_000_000}
	b, _ := json.Marshal(good)
	f.Add(b)
	f.Add([]byte(`{"iss":"` + fuzzIssuer + `","aud":["x","` + fuzzResource + `"],"sub":"u","preferred_username":"bob","scp":["a","b"],"exp":1700003600.5,"nbf":1699999999}`))
	f.Add([]byte(`{"payload":"eyJzdWIiOiJtYWxsb3J5In0","signatures":[{"protected":"eyJhbGciOiJSUzI1NiJ9","signature":"c2ln"}]}`))
	f.Add([]byte(`{"iss":"` + fuzzIssuer + `","sub":"a","sub":"b"}`))
	f.Add([]byte(`{"exp":"1700003600"}`))
	f.Add([]byte(`{"a":{"b":[{"c":1}]}} {}`))
	f.Add([]byte(`{"exp":1e400}`))
	f.Fuzz(func(t *testing.T, payload []byte) {
		v := &Verifier{cfg: Config{Issuer: fuzzIssuer, Audiences: []string{fuzzResource}, UserClaim: "preferred_username"}}
		p, err := v.checkClaims(payload, fuzzNow)
		if err != nil {
			return
		}
		var plain map[string]any
		if err := json.Unmarshal(payload, &plain); err != nil {
			t.Fatalf("accepted a payload encoding/json refuses: %v", err)
		}
		if p.Issuer != plain["iss"] || p.Subject != plain["sub"] || p.User != plain["preferred_username"] {
			t.Fatalf("principal %+v, plain decode iss %v sub %v user %v", p, plain["iss"], plain["sub"], plain["preferred_username"])
		}
		exp, ok := plain["exp"].(float64)
		if !ok {
			t.Fatalf("accepted exp %v (%T)", plain["exp"], plain["exp"])
		}
		// Seconds since the epoch from Unix, not Sub: a time.Duration saturates after 292
		// years, and an exp past 2262 is a valid NumericDate.
		if d := float64(p.Expiry.Unix()) + float64(p.Expiry.Nanosecond())/1e9 - exp; d > 1e-3 || d < -1e-3 {
			t.Fatalf("expiry %v, plain exp %v", p.Expiry, exp)
		}
		if !p.Expiry.Add(DefaultClockSkew).After(fuzzNow) {
			t.Fatalf("accepted a token expired at %v", p.Expiry)
		}
		var want []string
		add := func(s string) { // RFC 6749 §3.3's scope-token: NQCHARs only
			nqchar := s != "" && !strings.ContainsFunc(s, func(r rune) bool { return r < 0x21 || r > 0x7e || r == '"' || r == '\\' })
			if nqchar && !slices.Contains(want, s) {
				want = append(want, s)
			}
		}
		if s, ok := plain["scope"].(string); ok {
			for _, x := range strings.Split(s, " ") { // RFC 6749 §3.3: SP alone separates
				add(x)
			}
		}
		switch s := plain["scp"].(type) {
		case string:
			for _, x := range strings.Split(s, " ") {
				add(x)
			}
		case []any:
			for _, x := range s {
				add(x.(string))
			}
		}
		if !slices.Equal(p.Scopes, want) {
			t.Fatalf("scopes %q, plain decode gives %q", p.Scopes, want)
		}
		if !reflect.DeepEqual(asFloats(p.claims), plain) {
			t.Fatalf("claims %v, plain decode %v", p.claims, plain)
		}
		var exact map[string]any
		dec := json.NewDecoder(bytes.NewReader(payload))
		dec.UseNumber()
		if err := dec.Decode(&exact); err != nil {
			t.Fatal(err)
		}
		if !sameNumbers(p.claims, exact) {
			t.Fatalf("claims %v do not hold the numbers the payload wrote, %v", p.claims, exact)
		}
	})
}

// asFloats is v with every number a float64, as encoding/json decodes into any.
func asFloats(v any) any {
	switch x := v.(type) {
	case int64:
		return float64(x)
	case uint64:
		return float64(x)
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[k] = asFloats(e)
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = asFloats(e)
		}
		return out
	}
	return v
}

// sameNumbers reports whether every integer the payload wrote within 64 bits (exact, decoded
// with UseNumber) is that very integer in claims.
func sameNumbers(claims, exact any) bool {
	switch x := exact.(type) {
	case json.Number:
		if i, err := strconv.ParseInt(x.String(), 10, 64); err == nil {
			return claims == any(i)
		}
		if u, err := strconv.ParseUint(x.String(), 10, 64); err == nil {
			return claims == any(u)
		}
		_, isFloat := claims.(float64)
		return isFloat
	case map[string]any:
		c, ok := claims.(map[string]any)
		if !ok {
			c, ok = claims.(claimSet)
		}
		if !ok || len(c) != len(x) {
			return false
		}
		for k, e := range x {
			if !sameNumbers(c[k], e) {
				return false
			}
		}
		return true
	case []any:
		c, ok := claims.([]any)
		if !ok || len(c) != len(x) {
			return false
		}
		for i, e := range x {
			if !sameNumbers(c[i], e) {
				return false
			}
		}
		return true
	}
	return true
}

// FuzzQueryTokenSeen: queryHasToken sees an access_token wherever a query parser would find
// one: Go's (url.ParseQuery, pairs at '&', a pair with ';' dropped) or one that splits at ';'
// too, as older servers and proxies do.
func FuzzQueryTokenSeen(f *testing.F) {
	for _, q := range []string{"access_token=x", "a=1;access_token=y", "access%5Ftoken", "x=%zz&access_token", "a=b"} {
		f.Add(q)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		got := queryHasToken(raw)
		if v, _ := url.ParseQuery(raw); v.Has("access_token") && !got {
			t.Fatalf("url.ParseQuery finds access_token in %q; queryHasToken does not", raw)
		}
		if v, _ := url.ParseQuery(strings.ReplaceAll(raw, ";", "&")); v.Has("access_token") && !got {
			t.Fatalf("split at ';' too, %q has access_token; queryHasToken does not see it", raw)
		}
	})
}

// FuzzScopesReadAlikeJoined: the scopes a token grants, joined at spaces as the worker is told
// them (GEMGATE_SCOPES), read back as the same set by a reader that splits at SP alone and by
// one that splits at any white space (strings.Fields, Python's str.split()): no scope appears
// to a worker that gemgate did not grant, whatever `scope` and `scp` hold.
func FuzzScopesReadAlikeJoined(f *testing.F) {
	f.Add("mcp:use tenant:x\tmcp:write", "a b", "c")
	f.Add("mcp:use\u00a0mcp:write", "", "mcp:read\u2028mcp:write")
	f.Add("  mcp:use  ", "mcp:write\x00", "\x85")
	f.Fuzz(func(t *testing.T, scope, scp1, scp2 string) {
		got, err := tokenScopes(claimSet{"scope": scope, "scp": []any{scp1, scp2}})
		if err != nil {
			t.Fatal(err)
		}
		joined := strings.Join(got, " ")
		want := slices.Sorted(slices.Values(got))
		for name, read := range map[string][]string{"SP": strings.Split(joined, " "), "white space": strings.Fields(joined)} {
			read = slices.Compact(slices.Sorted(slices.Values(slices.DeleteFunc(read, func(s string) bool { return s == "" }))))
			if !slices.Equal(read, want) {
				t.Fatalf("scopes %q joined read at %s as %q", got, name, read)
			}
		}
	})
}
