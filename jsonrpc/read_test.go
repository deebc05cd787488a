package jsonrpc

import (
	"slices"
	"testing"
)

// TestParseReadsParamsOnce: Parse keeps the members of params, of their _meta and of the
// objects in _meta, so that later steps read those fields without reading the bytes again;
// nothing deeper, and no other member's object (arguments may be a megabyte).
func TestParseReadsParamsOnce(t *testing.T) {
	m, err := Parse([]byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo",`+
		`"arguments":{"a":{}},"_meta":{"progressToken":1,"caps":{"elicitation":{}}}}}`), Options{Client: true})
	if err != nil {
		t.Fatal(err)
	}
	walked := func(ms []member, key string) member {
		t.Helper()
		for _, m := range ms {
			if m.key == key {
				return m
			}
		}
		t.Fatalf("no member %q in %+v", key, ms)
		return member{}
	}
	if m.paramsRead == nil || len(m.params) != 3 {
		t.Fatalf("params read as %+v (walked %v)", m.params, m.paramsRead != nil)
	}
	if args := walked(m.params, "arguments"); args.walked || args.members != nil {
		t.Errorf("arguments were read member by member: %+v", args)
	}
	meta := walked(m.params, "_meta")
	if !meta.walked || len(meta.members) != 2 {
		t.Fatalf("_meta read as %+v", meta)
	}
	caps := walked(meta.members, "caps")
	if !caps.walked || len(caps.members) != 1 {
		t.Fatalf("_meta.caps read as %+v", caps)
	}
	if e := walked(caps.members, "elicitation"); e.walked {
		t.Errorf("an object within _meta.caps was read member by member: %+v", e)
	}
	o, err := ReadObject([]byte(`{"params":{"_meta":{}}}`), "result")
	if err != nil {
		t.Fatal(err)
	}
	if p := walked(o.members, "params"); p.walked {
		t.Errorf("ReadObject read a member's object member by member: %+v", p)
	}
}

func TestTrimLead(t *testing.T) {
	for in, want := range map[string]string{"": "", " \t\r\n,:": "", " ,\n:1": "1", `"k"`: `"k"`} {
		if got := string(trimLead([]byte(in))); got != want {
			t.Errorf("trimLead(%q) = %q, want %q", in, got, want)
		}
	}
}

// EachMember gives every member of an object, in order, as its raw key and value, and says
// whether the text was one object.
func TestEachMember(t *testing.T) {
	var got []string
	ok := EachMember([]byte(" {\"a\" : 1,\n\"b\\u0062\":{\"c\":[2, 3]}, \"a\":\"x\"} "), func(k, v []byte) {
		got = append(got, string(k)+"="+string(v))
	})
	want := []string{`"a"=1`, `"b\u0062"={"c":[2, 3]}`, `"a"="x"`}
	if !ok || !slices.Equal(got, want) {
		t.Errorf("EachMember = %v %q, want true %q", ok, got, want)
	}
	for _, bad := range []string{`[1]`, `"s"`, `{"a":1} {}`, `{"a":}`, `{"a":1`, ``} {
		if EachMember([]byte(bad), func(k, v []byte) {}) {
			t.Errorf("EachMember(%q) = true, want false", bad)
		}
	}
	obj := []byte(`{"content":[{"type":"text","text":"hi"}],"resultType":"complete"}`)
	// None but a pooled decoder now and then: the race detector's sync.Pool drops some.
	if n := testing.AllocsPerRun(100, func() { EachMember(obj, func(k, v []byte) {}) }); n > 2 {
		t.Errorf("EachMember allocates %v times, want none", n)
	}
}
