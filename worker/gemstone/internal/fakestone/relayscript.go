package main

import (
	"regexp"
	"slices"
	"strings"
)

// relayScript is what the fake reads in the relay script it runs: which of the fixes a real
// stone needs are there. Each field is one trap the fake springs when the fix is missing.
type relayScript struct {
	narrows           bool // every line the relay builds is narrowed to bytes before GsFile writes it
	guardsLogout      bool // every `w logout` is inside `[w logout] on: Error do:`
	answersEveryID    bool // a failed call is answered whatever its id (`id asJson`), not only integer ids
	transactionless   bool // the run block starts with `System transactionMode: #transactionless.`
	sourceStringClass bool // `set sourcestringclass String` between login and run
	endsWithTrue      bool // the run block's last statement is `true`
	lineEditor        bool // input is read through the line editor (nextLineTo:prompt:)
	// stdinBeforeCredential: `in := GsFile stdin.` comes before the token is read from it
	// (`jwt := in nextLineTo:`); otherwise in is nil there.
	stdinBeforeCredential bool
	// alive is what the script's `alive` block asks before it keeps a session after an error.
	alive liveness
	// hidesFatalText: the client is told of an error through `said`, which cuts the session's
	// description off a fatal-band text and writes the whole text to GsFile stderr; no handler
	// sends `e description` itself.
	hidesFatalText bool
	// gemNRS is what the script sends the new GsTsExternalSession after newDefault (its
	// gemNRS: and the NRS expression).
	gemNRS string
	// gemConfig: the NRS body is `gemnetobject -C <GEMGATE_GEM_CONFIG>` when that is set.
	gemConfig bool
	// relayName and userGemName are the prefixes of the names the script gives its own gem and
	// the user's with System cacheName: ("" for none); clipsNames: it cuts a name to 31
	// characters.
	relayName, userGemName string
	clipsNames             bool
	// readOnlyVar: readOnly is GEMGATE_READ_ONLY as the relay reads it.
	readOnlyVar bool
	// readOnlySource is the Smalltalk the relay runs in the user's session of a read-only
	// session (the literal of `readOnly ifTrue: [[call value: '...']`), "" when there is none.
	readOnlySource string
	// boundsAnswers: an answer longer than GEMGATE_MAX_ANSWER_BYTES is not written; the call
	// is answered with an answerTooLarge error instead.
	boundsAnswers bool
}

// liveness is the terms of the script's `alive` block, all of which must hold.
type liveness struct {
	loggedIn    bool // w isLoggedIn
	notInFlight bool // w isCallInProgress not
	notFatal    bool // (fatal value: e) isNil, with fatal reading GciError's ' original number: '
}

// fatalMarker is what GciError>>_error:in: puts before the number and the session's
// description of an error in the fatal band.
const fatalMarker = " original number: "

var (
	narrowWriter  = regexp.MustCompile(`nextPutAll:\s*\w+\s+(encodeAsUTF8|asString)\b`)
	literalWrite  = regexp.MustCompile(`nextPutAll:\s*'`)
	temporaries   = regexp.MustCompile(`^\s*\|[^|]*\|`)
	endsTrue      = regexp.MustCompile(`(^|[\s.])true\s*$`)
	nrsVariable   = regexp.MustCompile(`^gemNRS: (\w+); yourself$`)
	relayNaming   = regexp.MustCompile(`^\[System cacheName: \(cacheName value: '([^']+)'\)\] on: Error do: \[:e \| nil\]$`)
	userGemNaming = regexp.MustCompile(`^\[call value: 'System cacheName: ', \(cacheName value: '([^']+)'\) printString\] on: Error do: \[:e \| nil\]$`)
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
	r.readStatements(body)
	first := strings.TrimSpace(temporaries.ReplaceAllString(body, ""))
	r.transactionless = strings.HasPrefix(first, "System transactionMode: #transactionless.")
	r.endsWithTrue = endsTrue.MatchString(body)
	r.lineEditor = strings.Contains(body, "prompt:")
	open, read := strings.Index(body, "in := GsFile stdin."), strings.Index(body, "jwt := in nextLineTo:")
	r.stdinBeforeCredential = open >= 0 && read > open
	return r
}

// readStatements reads the definitions the fake acts on from the run block's statements.
func (r *relayScript) readStatements(body string) {
	stmts := statements(body)
	defs := definitions(stmts)
	alive, fatal := defs["alive"], defs["fatal"]
	r.alive = liveness{
		loggedIn:    strings.Contains(alive, "w isLoggedIn"),
		notInFlight: strings.Contains(alive, "w isCallInProgress not"),
		notFatal:    strings.Contains(alive, "(fatal value: e) isNil") && strings.Contains(fatal, "indexOfSubCollection: '"+fatalMarker+"'"),
	}
	said := defs["said"]
	described := 0
	for _, st := range stmts {
		if !strings.HasPrefix(st, "fatal := ") && !strings.HasPrefix(st, "said := ") {
			described += strings.Count(st, "e description")
		}
	}
	r.hidesFatalText = described == 0 && defs["err"] == "GsFile stderr" && strings.Contains(said, "fatal value: e") &&
		strings.Contains(said, "err nextPutAll:") && strings.Contains(said, "indexOfSubCollection: '"+fatalMarker+"'")
	if w := defs["w"]; strings.HasPrefix(w, "GsTsExternalSession newDefault") {
		r.gemNRS = strings.TrimSpace(strings.TrimPrefix(w, "GsTsExternalSession newDefault"))
		if m := nrsVariable.FindStringSubmatch(r.gemNRS); m != nil && defs[m[1]] != "" {
			r.gemNRS = "gemNRS: (" + defs[m[1]] + "); yourself"
			r.gemConfig = defs["gemConfig"] == "System gemEnvironmentVariable: 'GEMGATE_GEM_CONFIG'" &&
				slices.Contains(stmts, "(gemConfig isNil or: [gemConfig isEmpty]) ifFalse: [nrs body: 'gemnetobject -C ', gemConfig]")
		}
	}
	r.clipsNames = strings.Contains(defs["cacheName"], "s size > 31 ifTrue: [s := s copyFrom: 1 to: 31]")
	for _, st := range stmts {
		if m := relayNaming.FindStringSubmatch(st); m != nil {
			r.relayName = m[1]
		} else if m := userGemNaming.FindStringSubmatch(st); m != nil {
			r.userGemName = m[1]
		}
	}
	r.readOnlyVar = defs["readOnly"] == "(System gemEnvironmentVariable: 'GEMGATE_READ_ONLY') = '1'"
	r.boundsAnswers = strings.Contains(body, "(maxAnswer notNil and: [result size > maxAnswer])") &&
		strings.Contains(body, "maxAnswer := System gemEnvironmentVariable: 'GEMGATE_MAX_ANSWER_BYTES'.") &&
		strings.Contains(body, `"kind":"answerTooLarge"`)
	for _, st := range stmts {
		if rest, ok := strings.CutPrefix(st, "readOnly ifTrue: [ [call value: "); ok {
			r.readOnlySource, _ = stringLiteral(rest)
		}
	}
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
