package main

import (
	"regexp"
	"strings"
)

// relayScript is what the fake reads in the relay script it runs: which of the fixes a real
// stone needs are there. Each field is one trap the fake springs when the fix is missing.
type relayScript struct {
	narrows           bool // every line the relay builds is narrowed to bytes before GsFile writes it
	guardsLogout      bool // every `w logout` is inside `[w logout] on: Error do:`
	answersEveryID    bool // a failed call is answered whatever its id (`id asJson`), not only integer ids
	keepsLiveSession  bool // a failed call ends the session only when the gem is gone (isLoggedIn)
	transactionless   bool // the run block starts with `System transactionMode: #transactionless.`
	sourceStringClass bool // `set sourcestringclass String` between login and run
	endsWithTrue      bool // the run block's last statement is `true`
	lineEditor        bool // input is read through the line editor (nextLineTo:prompt:)
	// stdinBeforeCredential: `in := GsFile stdin.` comes before the token is read from it
	// (`jwt := in nextLineTo:`); otherwise in is nil there.
	stdinBeforeCredential bool
}

var (
	narrowWriter = regexp.MustCompile(`nextPutAll:\s*\w+\s+(encodeAsUTF8|asString)\b`)
	literalWrite = regexp.MustCompile(`nextPutAll:\s*'`)
	temporaries  = regexp.MustCompile(`^\s*\|[^|]*\|`)
	endsTrue     = regexp.MustCompile(`(^|[\s.])true\s*$`)
)

func readRelay(src string) relayScript {
	var r relayScript
	lines := strings.Split(src, "\n")
	login, run, end := -1, -1, -1
	for i, l := range lines {
		switch t := strings.TrimSpace(l); {
		case t == "login" && login < 0:
			login = i
		case t == "run" && run < 0:
			run = i
		case t == "%" && run >= 0 && end < 0:
			end = i
		case login >= 0 && run < 0 && strings.EqualFold(strings.Join(strings.Fields(t), " "), "set sourcestringclass String"):
			r.sourceStringClass = true
		}
	}
	if run < 0 || end < 0 {
		return r
	}
	body := stripComments(strings.Join(lines[run+1:end], "\n"))
	r.narrows = narrowWriter.MatchString(body) && !literalWrite.MatchString(body)
	r.guardsLogout = strings.Count(body, "w logout") == strings.Count(body, "[w logout] on: Error do:")
	r.answersEveryID = strings.Contains(body, "id asJson")
	r.keepsLiveSession = strings.Contains(body, "isLoggedIn")
	first := strings.TrimSpace(temporaries.ReplaceAllString(body, ""))
	r.transactionless = strings.HasPrefix(first, "System transactionMode: #transactionless.")
	r.endsWithTrue = endsTrue.MatchString(body)
	r.lineEditor = strings.Contains(body, "prompt:")
	open, read := strings.Index(body, "in := GsFile stdin."), strings.Index(body, "jwt := in nextLineTo:")
	r.stdinBeforeCredential = open >= 0 && read > open
	return r
}

// stripComments removes Smalltalk comments ("...") outside string literals ('...', with ”
// for a quote).
func stripComments(s string) string {
	var b strings.Builder
	inString, inComment := false, false
	for _, c := range s {
		switch {
		case inComment:
			inComment = c != '"'
			continue
		case inString:
			inString = c != '\''
		case c == '\'':
			inString = true
		case c == '"':
			inComment = true
			continue
		}
		b.WriteRune(c)
	}
	return b.String()
}
