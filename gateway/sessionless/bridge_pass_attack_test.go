package sessionless

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
)

// manyKeyResult is a result of about size bytes that names its resultType and then has as
// many short top-level members as fit: a worker's line may be 16 MiB.
func manyKeyResult(size int) json.RawMessage {
	var b strings.Builder
	b.WriteString(`{"resultType":"complete"`)
	for i := 0; b.Len() < size; i++ {
		fmt.Fprintf(&b, `,"%x":0`, i)
	}
	b.WriteString("}")
	return json.RawMessage(b.String())
}

// TestResultTypeOfManyKeysCostsLittle: reading the resultType of a result with many members
// costs about what encoding/json's decoding into one field did (a few allocations, however
// many members), not an allocation or more per member: the strict reader keeps a decoded key,
// a member record and, past 16 keys, a folded copy in a map for each, which made a 1 MiB
// result cost some 48 MB of garbage, and a 16 MiB line most of a gigabyte.
func TestResultTypeOfManyKeysCostsLittle(t *testing.T) {
	raw := manyKeyResult(1 << 20)
	if got := resultTypeOf(raw); got != "complete" {
		t.Fatalf("resultTypeOf = %q, want complete", got)
	}
	old := testing.AllocsPerRun(3, func() { oldResultTypeOf(raw) })
	if n := testing.AllocsPerRun(3, func() { resultTypeOf(raw) }); n > old+16 {
		t.Errorf("resultTypeOf allocates %.0f times on a %d-byte result of many members; decoding it into the one field %.0f",
			n, len(raw), old)
	}
}

// TestResultTypeOfAgreesOnIllFormedUTF8: a worker's message is not checked for UTF-8 (only a
// client's is), so its result may hold ill-formed bytes, which FuzzResultTypeOfAgrees passes
// over. resultTypeOf reads them as encoding/json does all the same.
func TestResultTypeOfAgreesOnIllFormedUTF8(t *testing.T) {
	for _, r := range []string{
		"{\"resultType\":\"input_required\xff\"}",
		"{\"resultType\":\"\xffinput_required\"}",
		"{\"resultType\":\"\xc3\"}",
		"{\"resultType\xff\":\"input_required\"}",
		"{\"resultType\":\"complete\",\"resultType\xff\":\"input_required\"}",
		"{\"\xff\":1,\"\xff\":2,\"resultType\":\"input_required\"}",
		"{\"\xfe\":1,\"\xff\":2,\"resultType\":\"input_required\"}",
		"{\"resultType\":\"a\",\"re\xc5\xbfultType\":\"b\"}",
		"{\"resultType\":\"a\",\"re\xc5ultType\":\"b\"}",
		"{\"resultType\":\"input_required\",\"x\":\"\xed\xa0\x80\"}",
	} {
		raw := json.RawMessage(r)
		if !json.Valid(raw) {
			t.Fatalf("%q is not JSON", r)
		}
		if got, want := resultTypeOf(raw), oldResultTypeOf(raw); got != want {
			t.Errorf("resultTypeOf(%q) = %q, encoding/json reads %q", r, got, want)
		}
	}
}

// FuzzResultTypeOfAgreesAnyBytes is FuzzResultTypeOfAgrees without its filter of ill-formed
// UTF-8, which a worker's result may hold.
func FuzzResultTypeOfAgreesAnyBytes(f *testing.F) {
	for _, r := range passResults {
		f.Add(r)
	}
	f.Add("{\"resultType\":\"complete\",\"RESULTTYPE\xff\":\"x\"}")
	f.Add("{\"re\xc5\xbfultType\":\"x\"}")
	f.Fuzz(func(t *testing.T, r string) {
		raw := json.RawMessage(r)
		if !json.Valid(raw) {
			return
		}
		if got, want := resultTypeOf(raw), oldResultTypeOf(raw); got != want {
			t.Errorf("resultTypeOf(%q) = %q, encoding/json reads %q", r, got, want)
		}
	})
}
