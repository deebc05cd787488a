//go:build linux

package pool

import (
	"bytes"
	"encoding/json"
	"testing"
	"time"

	"github.com/gemgate/gemgate/worker"
)

const refusalFuzzCredential = "eyJhbGciOiJSUzI1NiJ9.backend-cred.c2lnbmF0dXJl"

// validErrorObject: a JSON object whose members are exactly-named, once each, with "code" an
// integer and "message" a string (JSON-RPC 2.0 §5.1).
func validErrorObject(b []byte) bool {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return false
	}
	seen := map[string]bool{}
	okCode, okMsg := false, false
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return false
		}
		key := tok.(string)
		if seen[key] {
			return false
		}
		seen[key] = true
		var v any
		if err := dec.Decode(&v); err != nil {
			return false
		}
		switch key {
		case "code":
			n, ok := v.(json.Number)
			if _, err := n.Int64(); !ok || err != nil {
				return false
			}
			okCode = true
		case "message":
			_, okMsg = v.(string)
		}
	}
	if _, err := dec.Token(); err != nil {
		return false
	}
	if dec.More() {
		return false
	}
	var rest json.RawMessage
	return okCode && okMsg && dec.Decode(&rest) != nil
}

// refusal() of every valid JSON-RPC error object is a valid error object without the
// credential.
func FuzzRefusalStaysAnErrorObject(f *testing.F) {
	proc, err := worker.Start(worker.Spec{Path: "/bin/sh", Args: []string{"-c", "exec sleep 600"},
		StopGrace: 100 * time.Millisecond, Credential: []byte(refusalFuzzCredential)})
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(proc.Stop)
	for _, s := range []string{
		`{"code":-32000,"message":"login refused for ` + refusalFuzzCredential + `"}`,
		`{"code":-32000,"message":"login refused","data":{"token":"` + refusalFuzzCredential + `"}}`,
		`{"code":-32000,"message":"login refused for \"` + refusalFuzzCredential + `\""}`,
		`{"code":-32000,"message":"a\\/b ` + refusalFuzzCredential + `"}`,
		`{"code":-32000,"message":"x","data":"{\"m\":\"` + refusalFuzzCredential + `\"}"}`,
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		if !validErrorObject([]byte(in)) {
			return
		}
		out := refusal(proc, json.RawMessage(in))
		if !validErrorObject(out) {
			t.Fatalf("refusal(%s) = %s: not a JSON-RPC error object", in, out)
		}
		if bytes.Contains(out, []byte(refusalFuzzCredential)) {
			t.Fatalf("refusal(%s) = %s: holds the credential", in, out)
		}
	})
}
