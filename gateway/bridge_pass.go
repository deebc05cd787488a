package gateway

import (
	"bytes"
	"encoding/json"
	"errors"
	"github.com/gemgate/gemgate/gateway/sessionless"
	"github.com/gemgate/gemgate/gateway/wire"
	"net/http"
	"slices"
	"time"
	"unicode/utf8"

	"github.com/gemgate/gemgate/auth"
	"github.com/gemgate/gemgate/jsonrpc"
)

// A sessionless worker (one that speaks 2026-07-28 itself) answers its own input-required
// results: its inputRequests, under its own keys, reach the client untouched, and so does
// the round structure of a multi-round call. Only its requestState is wrapped: gemgate seals
// it inside a state of its own (sessionless/state.go) that binds it to the user (issuer, subject,
// access mode), the worker, the method and name, the input keys and an expiry, so that a
// retry can only go back to the worker that asked, for the user it asked, and the worker's
// state is restored on the way in. A retry is a request like any other: authenticated, its
// headers checked, and decided by the policy again (a read-only token cannot turn a retry
// into a write).

var (
	errStateTooLarge   = errors.New("the worker's requestState is too large to pass on")
	errStateWorkerGone = errors.New("requestState names a worker that is no longer running (restarted or ended); start the request again without it")
)

// wrapInputRequired seals a sessionless worker's input-required result's requestState for
// the client, in a state with the claims of base (who, which worker, which request) and the
// result's keys, the worker's state and an expiry. A result of another kind, or without a
// requestState, is returned as it is.
func (g *Gateway) wrapInputRequired(base sessionless.Claims, result json.RawMessage) (json.RawMessage, error) {
	if isObject(result) {
		if !mayHaveKey(result, "resultType") {
			return result, nil // nearly every answer: not decoded, however large
		}
		// Looked up as the map below would: exact key, the last one; a value that decodes
		// to anything but the string input_required is not one.
		if raw, ok := lastMember(result, "resultType"); !ok || raw[0] != '"' || !decodesTo(raw, "input_required") {
			return result, nil
		}
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(result, &fields); err != nil {
		return nil, err
	}
	var kind string
	if raw, ok := fields["resultType"]; !ok || json.Unmarshal(raw, &kind) != nil || kind != "input_required" {
		return result, nil
	}
	raw, ok := fields["requestState"]
	if !ok {
		return result, nil
	}
	var ws string
	if err := json.Unmarshal(raw, &ws); err != nil {
		return nil, errors.New("the worker's requestState is not a string")
	}
	var inputs map[string]json.RawMessage
	if err := json.Unmarshal(fields["inputRequests"], &inputs); err != nil {
		return nil, errors.New("the worker's inputRequests is not an object")
	}
	keys := make([]string, 0, len(inputs))
	for k := range inputs {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	timeout := g.opts.InputRequiredTimeout
	if timeout <= 0 {
		timeout = DefaultInputRequiredTimeout
	}
	c := base
	c.Park, c.Keys, c.Expires, c.Pass, c.WorkerState = "", keys, time.Now().Add(timeout).Unix(), true, ws
	state := g.parks.key.Seal(c)
	if len(state) > sessionless.MaxStateLen {
		return nil, errStateTooLarge
	}
	fields["requestState"], _ = json.Marshal(state)
	return json.Marshal(fields)
}

// openState verifies a client's requestState and that it belongs to this caller and request.
func (g *Gateway) openState(msg *jsonrpc.Message, mr *sessionless.Checks, p auth.Principal, readOnly bool, state string) (sessionless.Claims, *wire.Error) {
	claims, err := g.parks.key.Open(state, time.Now())
	if err == nil {
		err = claims.BelongsTo(p, readOnly, msg.Method, mr.Name)
	}
	if err != nil {
		return claims, sessionless.Refusal(msg, http.StatusBadRequest, jsonrpc.CodeInvalidParams, err.Error(), nil)
	}
	return claims, nil
}

// passInputRequired is a sessionless worker's answer on its way to the client: an
// input-required result gets its requestState wrapped; one that cannot be wrapped is an
// error for the client (the worker's state is never handed out unbound).
func (g *Gateway) passInputRequired(pk *parked, resp *jsonrpc.Message, outcome string) (*jsonrpc.Message, string) {
	wrapped, err := g.wrapInputRequired(sessionless.Claims{Issuer: pk.owner.issuer, Subject: pk.owner.subject, ReadOnly: pk.access.ReadOnly,
		Worker: pk.member.WorkerID(), Method: pk.msg.Method, Name: pk.name}, resp.Result)
	if err != nil {
		g.log.Warn("a sessionless worker's input-required result could not be passed on", "worker", pk.member.WorkerID(), "error", err)
		return jsonrpc.ErrorResponse(resp.ID, jsonrpc.CodeInternalError, "the worker's answer could not be passed on: "+err.Error(), nil), "error"
	}
	out := *resp
	out.Result = wrapped
	if resultTypeOf(wrapped) == "input_required" {
		outcome = "input_required"
	}
	return &out, outcome
}

// resultTypeOf is a result's resultType, "" when absent or unreadable.
func resultTypeOf(result json.RawMessage) string {
	if !mayHaveKey(result, "resultType") {
		return ""
	}
	return lastFoldedString(result) // as encoding/json reads it into a field
}

// mayHaveKey reports whether raw, JSON that jsonrpc.Parse validated, may have a member that
// encoding/json reads as key: by its exact name, or by the case folding it applies to struct
// fields. false means decoding raw to look for key would find nothing, so a megabyte answer
// need not be decoded to learn it is not input-required, or not a tool error. It looks only
// at the strings, one IndexByte between quotes: a string too long to spell key even in
// escapes is passed over, a short one with an escape is decoded first.
func mayHaveKey(raw []byte, key string) bool {
	for rest := raw; ; {
		i := bytes.IndexByte(rest, '"')
		if i < 0 {
			return false
		}
		quoted := rest[i:]
		rest = rest[i+1:]
		j := closingQuote(rest)
		if j < 0 {
			return true // not JSON after all: the decoder is to say what it is
		}
		if s := rest[:j]; len(s) <= maxEscapedRune*len(key) {
			if bytes.IndexByte(s, '\\') >= 0 {
				var dec string
				if json.Unmarshal(quoted[:j+2], &dec) != nil || mayFoldTo([]byte(dec), key) {
					return true
				}
			} else if mayFoldTo(s, key) {
				return true
			}
		}
		rest = rest[j+1:]
	}
}

// maxEscapedRune is the most bytes one rune takes inside a JSON string: a surrogate pair of
// \u escapes.
const maxEscapedRune = 12

// closingQuote is the index in s, what follows a string's opening quote, of its closing quote:
// the first quote not escaped (preceded by an even number of backslashes); -1 if none.
func closingQuote(s []byte) int {
	for off := 0; ; {
		j := bytes.IndexByte(s[off:], '"')
		if j < 0 {
			return -1
		}
		j += off
		k := j
		for k > off && s[k-1] == '\\' {
			k--
		}
		// A run of backslashes that reaches back to off began after an unescaped quote's
		// successor or at the string's start, so counting from off is counting it whole.
		if (j-k)%2 == 0 {
			return j
		}
		off = j + 1
	}
}

// mayFoldTo: s has key's length in runes, and each of its runes is key's in ASCII of either
// case, or not ASCII at all (some, such as U+017F, fold to ASCII letters: counted as a match).
func mayFoldTo(s []byte, key string) bool {
	if len(s) < len(key) || len(s) > utf8.UTFMax*len(key) {
		return false
	}
	k := 0
	for i := 0; i < len(s); k++ {
		r, n := utf8.DecodeRune(s[i:])
		i += n
		if k == len(key) {
			return false
		}
		if r < utf8.RuneSelf && lowerASCII(byte(r)) != lowerASCII(key[k]) {
			return false
		}
	}
	return k == len(key)
}

func lowerASCII(c byte) byte {
	if 'A' <= c && c <= 'Z' {
		return c + 'a' - 'A'
	}
	return c
}

// isObject reports whether raw, valid JSON, is an object.
func isObject(raw []byte) bool {
	t := bytes.TrimLeft(raw, " \t\r\n")
	return len(t) > 0 && t[0] == '{'
}
