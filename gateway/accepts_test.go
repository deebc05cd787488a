package gateway

import (
	"mime"
	"net/http"
	"strconv"
	"strings"
	"testing"
)

// acceptsRef is accepts as it was written first, every element through mime.ParseMediaType:
// the reference the allocation-free reading must agree with.
func acceptsRef(h http.Header, mt string) bool {
	values := h.Values("Accept")
	if len(values) == 0 {
		return true
	}
	typ, sub, _ := strings.Cut(mt, "/")
	for _, v := range values {
		for elem := range strings.SplitSeq(v, ",") {
			if strings.TrimSpace(elem) == "" {
				continue
			}
			rng, params, err := mime.ParseMediaType(elem)
			if err != nil {
				continue
			}
			if q, ok := params["q"]; ok {
				if f, err := strconv.ParseFloat(q, 64); err != nil || f <= 0 {
					continue
				}
			}
			rt, rs, _ := strings.Cut(rng, "/")
			if rng == "*/*" || rng == "*" || (rt == typ && (rs == "*" || rs == sub)) {
				return true
			}
		}
	}
	return false
}

// acceptElems are Accept elements well formed and not: cases, spaces, wildcards, q values,
// parameters, stray separators and bytes a token may not hold.
var acceptElems = []string{
	"application/json", "text/event-stream", "APPLICATION/JSON", "Text/Event-Stream", " application/json ",
	"\tapplication/json", "*/*", "*", "application/*", "text/*", "*/json", "text/html", "image/png",
	"application/json;q=0", "application/json; q=0.5", "text/event-stream;q=0.0", "application/json;q=abc",
	"application/json;charset=utf-8", "application/json;q=1;x=y", "application/json;", "application/json; ",
	"application/json ;q=1", "application /json", "application/ json", "application/json/x", "application/",
	"/json", "/", "", " ", "application/js on", "application/json\"", "app@lication/json", "application/json(x)",
	"application/jsön", "text/event-stream;q=\"0.3\"", "text/event-stream;q=", "text/event-stream;Q=0",
	"application/json;q=0;q=1", "*/*;q=0", "text/event-streamx", "text/event", "application/jsonx",
}

// TestAcceptsAgreesWithMIME: for every Accept header of one or two of the elements above, in
// one value or two, accepts decides as the mime.ParseMediaType reading does, for both media
// types the transport asks about.
func TestAcceptsAgreesWithMIME(t *testing.T) {
	check := func(values ...string) {
		h := http.Header{}
		for _, v := range values {
			h.Add("Accept", v)
		}
		for _, mt := range []string{mediaJSON, mediaSSE} {
			if got, want := accepts(h, mt), acceptsRef(h, mt); got != want {
				t.Errorf("accepts(%q, %s) = %v, want %v", values, mt, got, want)
			}
		}
	}
	check()
	for _, a := range acceptElems {
		check(a)
		for _, b := range acceptElems {
			check(a + "," + b)
			check(a, b)
		}
	}
}

// TestAcceptsAllocs: the Accept headers clients send are read without allocating.
func TestAcceptsAllocs(t *testing.T) {
	h := http.Header{}
	h.Set("Accept", "application/json, text/event-stream")
	if n := testing.AllocsPerRun(100, func() {
		if !accepts(h, mediaJSON) || !accepts(h, mediaSSE) {
			t.Fatal("refused")
		}
	}); n != 0 {
		t.Fatalf("%.1f allocations per Accept check, want 0", n)
	}
}

// TestContentTypeAgreesWithMIME: a POST's Content-Type that checkPostHeaders takes for JSON
// is application/json to mime.ParseMediaType too, with a UTF-8 charset if any; gemgate is the
// stricter reader (parameters split at ';' only as plain name=value pairs), never the looser.
func TestContentTypeAgreesWithMIME(t *testing.T) {
	for _, ct := range acceptElems {
		r, _ := http.NewRequest(http.MethodPost, "http://gw.test/mcp", nil)
		r.Header.Set("Content-Type", ct)
		mt, ps, err := mime.ParseMediaType(ct)
		cs, hasCharset := ps["charset"]
		want := err == nil && mt == mediaJSON && (!hasCharset || strings.EqualFold(cs, "utf-8"))
		if got := checkPostHeaders(r) == nil; got && !want {
			t.Errorf("Content-Type %q: accepted, though mime reads it as %q %v (%v)", ct, mt, ps, err)
		}
	}
	for _, ct := range []string{"application/json", "application/json; charset=utf-8", "Application/JSON;charset=UTF-8", `application/json; charset="utf-8"`, "application/json;"} {
		r, _ := http.NewRequest(http.MethodPost, "http://gw.test/mcp", nil)
		r.Header.Set("Content-Type", ct)
		if he := checkPostHeaders(r); he != nil {
			t.Errorf("Content-Type %q: refused (%v)", ct, he)
		}
	}
}
