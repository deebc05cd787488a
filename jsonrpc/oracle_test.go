package jsonrpc

import (
	"bytes"
	"encoding/json"
	"fmt"
	"unicode/utf8"
)

// The oracle: how a message is checked by encoding/json's Valid, utf8.Valid and encoding/json's
// own token reading for the depth, one pass each, so that the differential tests can hold the
// tokenizer to deciding exactly as they do. Only the checks are the oracle's; the strict
// reading of the envelope after them is shared.

func oldParseClient(b []byte) (*Message, error) {
	if !utf8.Valid(b) {
		return nil, fmt.Errorf("%w: the body is not valid UTF-8", ErrParse)
	}
	if json.Valid(b) && referenceDepth(b) > MaxDepth {
		return nil, errTooDeep
	}
	return oldParse(b)
}

func oldParse(b []byte) (*Message, error) {
	b = bytes.TrimRight(bytes.TrimLeft(b, " \t\r\n"), " \t\r\n") // what encoding/json allows around a value
	if len(b) == 0 || b[0] != '{' {
		if len(b) > 0 && b[0] == '[' && json.Valid(b) {
			return nil, fmt.Errorf("%w: batches are not supported", ErrInvalid)
		}
		return nil, ErrParse
	}
	if !json.Valid(b) {
		return nil, ErrParse
	}
	env, err := ReadObject(bytes.Clone(b), "the message")
	if err != nil {
		return nil, err
	}
	m, err := fromEnvelope(env)
	if err != nil {
		return nil, err
	}
	if p, ok := env.Raw("params"); ok && p[0] == '{' {
		m.paramsRead, m.paramsSum = p, hashParams(p) // as Parse keeps them
	}
	return m, nil
}

func oldReadObject(raw json.RawMessage, name string) (Object, error) {
	raw = bytes.TrimLeft(raw, " \t\r\n")
	if !json.Valid(raw) {
		return Object{}, fmt.Errorf("%w: %s is not valid JSON", ErrParse, name)
	}
	return ReadObject(raw, name)
}
