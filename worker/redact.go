package worker

import (
	"bytes"
	"encoding/base64"
	"net/url"
	"regexp"
	"slices"
	"strconv"

	"github.com/gemgate/gemgate/internal/clip"
)

// A worker may print what it was handed (a login message quoting its token): every line of
// its that gemgate logs or traces, or reads as a greeting, goes through Redacted first.

// snippet is a worker's text as a log line quotes it: without the secrets it was handed, and
// clipped.
func (p *Process) snippet(b []byte) string { return clip.Bytes(p.Redacted(b), 512) }

// Redacted is b with every secret the worker was handed replaced by [redacted] (b itself when
// it holds none), for its log lines and for worker text gemgate passes on (a refused
// initialize quoting a login). It also finds a secret JSON-escaped (the line is then logged
// with printable ASCII escapes written out), in base64 or percent-encoded (secretSpellings).
func (p *Process) Redacted(b []byte) []byte {
	secrets := p.secrets
	if len(secrets) == 0 {
		return b
	}
	if bytes.IndexByte(b, '\\') >= 0 {
		if plain := unescapeASCII(b); holdsSecret(plain, secrets) {
			b = plain
		}
	}
	for _, s := range secrets {
		if bytes.Contains(b, s) {
			b = bytes.ReplaceAll(b, s, []byte("[redacted]"))
		}
	}
	// What is left may still quote a secret in escapes within escapes, beside a copy just
	// taken out or alone.
	if bytes.IndexByte(b, '\\') >= 0 && holdsNested(b, secrets) {
		return []byte(nestedSecret)
	}
	return b
}

// minEncodedForm is the shortest base64 form of a secret that is looked for: shorter ones
// (a secret of a few bytes) would take ordinary words out of the worker's lines.
const minEncodedForm = 8

// encodedForms are the spellings of secret s in a longer base64 text, in the standard and the
// URL alphabet: s after 0, 1 or 2 other bytes of that text, without the characters s shares
// with its neighbours (two or three at the start, one at the end), so that each is found
// whatever comes before and after it. Padding is never part of a form.
func encodedForms(s []byte) [][]byte {
	var out [][]byte
	for _, enc := range [2]*base64.Encoding{base64.RawStdEncoding, base64.RawURLEncoding} {
		for k := range 3 {
			e := enc.AppendEncode(nil, append(make([]byte, k, k+len(s)), s...))
			head, tail := [3]int{0, 2, 3}[k], 0
			if (k+len(s))%3 != 0 {
				tail = 1
			}
			if len(e)-head-tail < minEncodedForm {
				continue
			}
			// The alphabets differ only where s's encoding has + or /.
			out = addForm(out, e[head:len(e)-tail])
		}
	}
	return out
}

// addForm is forms with form added, unless it is there already.
func addForm(forms [][]byte, form []byte) [][]byte {
	if slices.ContainsFunc(forms, func(f []byte) bool { return bytes.Equal(f, form) }) {
		return forms
	}
	return append(forms, form)
}

// percentForms are the spellings of secret s percent-encoded, as a URL quotes it: in a query
// (url.QueryEscape: ' ' as '+') and in a path (url.PathEscape), each with upper- and
// lower-case hex digits ("%2F", "%2f"). Only those that differ from s are given.
func percentForms(s []byte) [][]byte {
	var out [][]byte
	for _, e := range [2]string{url.QueryEscape(string(s)), url.PathEscape(string(s))} {
		lower := percentEscape.ReplaceAllFunc([]byte(e), bytes.ToLower)
		for _, form := range [2][]byte{[]byte(e), lower} {
			if !bytes.Equal(form, s) {
				out = addForm(out, form)
			}
		}
	}
	return out
}

// percentEscape is one escape of url's escaping, whose hex digits are upper case.
var percentEscape = regexp.MustCompile(`%[0-9A-F]{2}`)

// nestedSecret stands for a line that quotes a secret in escapes within escapes (JSON quoted
// in JSON): such a line cannot be written out as the same text without it, so none of it is.
const nestedSecret = "[a line quoting the worker's credential in nested escapes: not logged]"

// holdsNested reports a secret in b once escaped backslashes are taken as single ones, up to
// three levels deep (JSON in JSON in JSON).
func holdsNested(b []byte, secrets [][]byte) bool {
	for range 3 {
		b = unescapeASCII(bytes.ReplaceAll(b, []byte(`\\`), []byte(`\`)))
		if holdsSecret(b, secrets) {
			return true
		}
	}
	return false
}

func holdsSecret(b []byte, secrets [][]byte) bool {
	return slices.ContainsFunc(secrets, func(s []byte) bool { return bytes.Contains(b, s) })
}

// unescapeASCII writes out, in a copy of b, the JSON escapes of printable ASCII that need
// none: "\/" and "\u0020" to "\u007e", except those of the quote and the backslash. An
// escaped backslash stays as it is, so what follows it is never read as an escape.
func unescapeASCII(b []byte) []byte {
	out := make([]byte, 0, len(b))
	for i := 0; i < len(b); i++ {
		if b[i] != '\\' || i+1 == len(b) {
			out = append(out, b[i])
			continue
		}
		next := b[i+1]
		if next == '/' {
			out = append(out, '/')
			i++
			continue
		}
		if next == 'u' && i+5 < len(b) {
			if r, err := strconv.ParseUint(string(b[i+2:i+6]), 16, 16); err == nil && r >= 0x20 && r <= 0x7e && r != '"' && r != '\\' {
				out = append(out, byte(r))
				i += 5
				continue
			}
		}
		out = append(out, b[i], next) // an escaped backslash or any other escape: kept whole
		i++
	}
	return out
}

// secretSpellings are copies of the values to redact a worker's lines of, the credential and
// the others, none empty, followed by their encoded forms.
func secretSpellings(credential []byte, others [][]byte) [][]byte {
	var out, forms [][]byte
	for _, s := range append([][]byte{credential}, others...) {
		if len(s) > 0 {
			out = append(out, bytes.Clone(s))
			forms = append(append(forms, encodedForms(s)...), percentForms(s)...)
		}
	}
	return append(out, forms...)
}
