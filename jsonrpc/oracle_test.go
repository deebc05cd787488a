package jsonrpc

import (
	"bytes"
	"encoding/json"
	"fmt"
	"unicode/utf8"
)

// The oracle: how Parse, ParseClient and ReadObject checked a message before the one-pass
// validator (valid.go), kept as they were (utf8.Valid, CheckDepth and encoding/json's Valid,
// one pass each) so that the differential tests can hold the new code to deciding exactly
// as they did. Only the checks are kept here; the strict reading after them is shared.

func oldParseClient(b []byte) (*Message, error) {
	if !utf8.Valid(b) {
		return nil, fmt.Errorf("%w: the body is not valid UTF-8", ErrParse)
	}
	if err := CheckDepth(b, MaxDepth); err != nil {
		if !json.Valid(b) {
			return nil, ErrParse
		}
		return nil, err
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
	env, err := readValidObject(bytes.Clone(b), "the message")
	if err != nil {
		return nil, err
	}
	if err := env.Exact(envelopeKeys...); err != nil {
		return nil, err
	}
	if v, _, err := env.String("jsonrpc"); err != nil || v != "2.0" {
		return nil, fmt.Errorf("%w: jsonrpc must be \"2.0\"", ErrInvalid)
	}
	m := &Message{}
	m.ID, _ = env.Raw("id")
	m.Params, _ = env.Raw("params")
	m.validParams, m.validSum = m.Params, paramsSum(m.Params)
	m.Result, _ = env.Raw("result")
	m.Error, _ = env.Raw("error")
	method, _, err := env.String("method")
	if err != nil {
		return nil, fmt.Errorf("%w: method must be a string", ErrInvalid)
	}
	m.Method = method
	if m.ID != nil && !validID(m.ID) {
		return nil, fmt.Errorf("%w: id must be a string, a number or null", ErrInvalid)
	}
	switch {
	case m.Method != "":
		if m.Result != nil || m.Error != nil {
			return nil, fmt.Errorf("%w: a request carries no result or error", ErrInvalid)
		}
		if m.ID != nil && string(m.ID) == "null" {
			return nil, fmt.Errorf("%w: a request id must not be null", ErrInvalid)
		}
	case m.ID != nil:
		if (m.Result == nil) == (m.Error == nil) {
			return nil, fmt.Errorf("%w: a response carries exactly one of result and error", ErrInvalid)
		}
	default:
		return nil, fmt.Errorf("%w: neither a method nor an id", ErrInvalid)
	}
	return m, nil
}

func oldReadObject(raw json.RawMessage, name string) (Object, error) {
	raw = bytes.TrimLeft(raw, " \t\r\n")
	if !json.Valid(raw) {
		return Object{}, fmt.Errorf("%w: %s is not valid JSON", ErrParse, name)
	}
	return readValidObject(raw, name)
}
