package pool

import (
	"encoding/json"
	"testing"

	"github.com/gemgate/gemgate/jsonrpc"
)

// FuzzRewriteProgressAsTheWorkerReads: whatever params gemgate reads strictly with a
// params._meta.progressToken (as the gateway reads a client's), the rewrite gives the worker,
// reading as the go-sdk does (encoding/json, keys folded), gemgate's own token and nothing
// else changed that it decides on (params.name): two callers' tokens never meet at a worker.
func FuzzRewriteProgressAsTheWorkerReads(f *testing.F) {
	for _, s := range []string{
		`{"name":"t","_meta":{"progressToken":1}}`,
		`{"name":"t","arguments":{"a":"<&>"},"_meta":{"progressToken":"x","other":{"progressToken":2}}}`,
		`{"n\u0061me":"t","_m\u0065ta":{"progress\u0054oken":"x"}}`,
		`{"name":"\ud800","_meta":{"progressToken":{"a":[1,2]}}}`,
		`{"_meta":{"progressToken":"gemgate-p1"},"name":"t","NAMe2":1}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, params []byte) {
		p, err := jsonrpc.ReadObject(params, "params")
		if err != nil || p.Exact("_meta", "name", "arguments") != nil {
			return
		}
		meta, ok, err := p.Object("_meta")
		if err != nil || !ok || meta.Exact("progressToken") != nil {
			return
		}
		tok, ok := meta.Raw("progressToken")
		if !ok || string(tok) == "null" {
			return
		}
		out, err := rewriteProgress(params, "gemgate-p7")
		if err != nil {
			t.Fatalf("rewrite refused %s: %v", params, err)
		}
		var worker struct {
			Name any `json:"name"`
			Meta struct {
				ProgressToken any `json:"progressToken"`
			} `json:"_meta"`
		}
		if err := json.Unmarshal(out, &worker); err != nil {
			t.Fatalf("the worker cannot read the rewritten params %s: %v", out, err)
		}
		if worker.Meta.ProgressToken != "gemgate-p7" {
			t.Fatalf("the worker reads progressToken %v in %s (from %s); want gemgate's", worker.Meta.ProgressToken, out, params)
		}
		var before struct {
			Name any `json:"name"`
		}
		if json.Unmarshal(params, &before) == nil {
			b, _ := json.Marshal(before.Name)
			a, _ := json.Marshal(worker.Name)
			if string(a) != string(b) {
				t.Fatalf("the rewrite changed params.name as the worker reads it: %s -> %s (%s -> %s)", b, a, params, out)
			}
		}
	})
}
