package main

import (
	"bufio"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf16"
)

// scriptNeeds are the relay script's parts this stand-in acts out; a script without them is
// not the relay it imitates.
var scriptNeeds = []string{"iferr 1 exit", "login", "jwt := in nextLineTo:", "GEMGATE_READ_ONLY", "jwtPassword:",
	"nbExecute:", "lastResult", "handleJsonString:", "nextLineTo:", "gemgate-nonce-", "51438"}

func fail(code int, format string, a ...any) int {
	fmt.Fprintf(os.Stderr, "fakestone topaz: "+format+"\n", a...)
	return code
}

// lineEditorMax is the fake's model of topaz's line editor (nextLineTo:prompt:): it answers
// at most this many bytes per read and leaves the rest for the next. No public source states
// the real limit; the model exists so that a relay reading through the line editor fails the
// 1 MiB test, and the real-stone suite sends 1 MiB to settle it.
const lineEditorMax = 64 << 10

// topaz acts out `topaz -l -q -I <ini> -S <script> -- --user <name>` (the relay) and
// `topaz -l -q -I <ini> -S <script>` (the admin script of gemstone-jwt-keys).
func topaz(args []string) int {
	if len(args) < 6 || args[0] != "-l" || args[1] != "-q" || args[2] != "-I" || args[4] != "-S" || (len(args) > 6 && args[6] != "--") {
		return fail(2, "expected -l -q -I <ini> -S <script> [-- <args>], got %q", args)
	}
	ini, script := args[3], args[5]
	var rest []string
	if len(args) > 6 {
		rest = args[7:]
	}
	if os.Getenv("GEMSTONE") != home() {
		return fail(2, "GEMSTONE is %q, not this product %q", os.Getenv("GEMSTONE"), home())
	}
	c, err := loadConfig()
	if err != nil {
		return fail(2, "config: %v", err)
	}
	fi, err := os.Stat(ini)
	if err != nil {
		return fail(2, "ini: %v", err)
	}
	if fi.Mode().Perm() != 0o600 {
		return fail(2, "ini %s has mode %04o, not 0600", ini, fi.Mode().Perm())
	}
	iniText, err := os.ReadFile(ini)
	if err != nil {
		return fail(2, "ini: %v", err)
	}
	src, err := os.ReadFile(script)
	if err != nil {
		return fail(2, "script: %v", err)
	}
	t := &topazRun{c: c, out: bufio.NewWriter(os.Stdout)}
	defer t.out.Flush()
	stone, user, pass := parseINI(string(iniText))

	// The login: linked, so the stone is found through its lock file alone.
	ls := locks()
	if l, ok := ls[stone]; !ok || l.Type != "Stone" || !l.running() {
		t.gemstoneError(fmt.Sprintf("could not find server '%s' on host 'localhost' because service not found, getaddrinfo failed, EAI error 8", stone), "4065")
		return c.iferrExit()
	}
	if rest == nil {
		if user != c.AdminUser || pass != c.AdminPassword {
			t.gemstoneError("The userId/password combination is invalid or expired.", "4051")
			return c.iferrExit()
		}
		return t.adminScript(string(src))
	}
	if os.Getenv("GEMSTONE_GLOBAL_DIR") == "" {
		return fail(2, "GEMSTONE_GLOBAL_DIR is not set")
	}
	for _, s := range scriptNeeds {
		if !strings.Contains(string(src), s) {
			return fail(2, "script %s lacks %q", script, s)
		}
	}
	if user != c.ServiceUser || pass != c.ServicePassword {
		t.gemstoneError("The userId/password combination is invalid or expired.", "4051")
		return c.iferrExit()
	}
	t.say("successful login")
	t.say("fileformat is now utf8")
	t.rs = readRelay(string(src))
	if c.Unicode16 {
		t.say("sourcestringclass is now Unicode16")
	}
	return t.relay(rest, stone, ls)
}

// topazRun is one topaz process: the stone's configuration, what the relay script holds,
// and stdout.
type topazRun struct {
	c   Config
	rs  relayScript
	out *bufio.Writer
}

func (t *topazRun) say(line string) { t.out.WriteString(line + "\n"); t.out.Flush() }

// gemstoneError prints topaz's error report for an error nothing handled.
func (t *topazRun) gemstoneError(text, number string) {
	t.say("-----------------------------------------------------")
	t.say("GemStone: Error         Nonfatal")
	t.say(text)
	if number != "" {
		t.say("Error Category: 231169 [GemStone] Number: " + number + "  Arg Count: 1 Context : 20")
	}
}

// emitGemStoneText writes a line the relay built around GemStone's own error text: as UTF-16
// code units, NULs and all, when that text is a 16-bit string and the relay does not narrow
// what it writes.
func (t *topazRun) emitGemStoneText(line string) {
	if !t.c.WideErrors || t.rs.narrows {
		t.say(line)
		return
	}
	var b strings.Builder
	for _, u := range utf16.Encode([]rune(line)) {
		b.WriteByte(byte(u))
		b.WriteByte(byte(u >> 8))
	}
	t.out.WriteString(b.String() + "\n")
	t.out.Flush()
}

func (t *topazRun) greet(kind, msg string) int {
	b, _ := json.Marshal(map[string]string{"gemgate": "error", "kind": kind, "message": msg})
	if kind == "config" || kind == "versionTooOld" {
		t.say(string(b)) // the relay's own literals
	} else {
		t.emitGemStoneText(string(b))
	}
	return 0
}

var (
	netldiInNRS    = regexp.MustCompile(`#netldi:([^\s#!']+)`)
	netldiSetter   = regexp.MustCompile(`netldi: '([^']*)'`)
	tempObjSetting = regexp.MustCompile(`(?:^|;)GEM_TEMPOBJ_CACHE_SIZE=(\d+);`)
)

// relay acts out relay.tpz after the service login.
func (t *topazRun) relay(rest []string, stone string, ls map[string]Lock) int {
	c := t.c
	name := ""
	if i := slices.Index(rest, "--user"); i >= 0 && i+1 < len(rest) {
		name = rest[i+1]
	}
	if name == "" || name != os.Getenv("GEMGATE_USER") {
		return t.greet("config", "the relay needs --user <name> equal to GEMGATE_USER")
	}
	// The token is the first line of stdin, read as the requests are. The relay looks in no
	// environment variable and no other descriptor for it, and neither does the fake: a
	// gateway that sends it any other way has its first request taken for the token.
	if !t.rs.stdinBeforeCredential {
		t.gemstoneError("a MessageNotUnderstood occurred (error 2010), a UndefinedObject does not understand  #'nextLineTo:'", "2010")
		return c.iferrExit()
	}
	in := bufio.NewReaderSize(os.Stdin, 1<<20)
	jwt, _ := t.readLine(in)
	if jwt = strings.TrimSpace(jwt); jwt == "" {
		return t.greet("config", "no credential on the first line of stdin; set worker_credential to exchange (or passthrough)")
	}
	if !t.rs.readOnlyVar {
		return fail(2, "the script does not read readOnly from GEMGATE_READ_ONLY as the fake acts it out")
	}
	readOnly := os.Getenv("GEMGATE_READ_ONLY") == "1"
	if !atLeast(c.Version, "3.7.5") {
		return t.greet("versionTooOld", "this GemStone has no JWT login (GsTsExternalSession>>jwtPassword:)")
	}
	s := &session{cfg: c, user: name, stone: stone, netldi: t.netldi(), tempObjKB: t.tempObjKB(), methods: map[string]string{}, globals: map[string]string{}}
	if code, done := t.login(s, jwt, ls); done {
		return code
	}
	if code, done := t.probe(s); done {
		return code
	}
	s.names = [2]string{t.cacheName(t.rs.relayName, name, "TopazL"), t.cacheName(t.rs.userGemName, name, "GciTs")}
	if readOnly {
		if code, done := t.makeReadOnly(s); done {
			return code
		}
	}
	b, _ := json.Marshal(map[string]any{"gemgate": "ready", "user": name, "readOnly": readOnly})
	t.say(string(b))
	if c.WriteLoad && !t.rs.transactionless {
		// Waiting for input inside a transaction: the stone's SigAbort goes unanswered and, after
		// STN_GEM_ABORT_TIMEOUT_SECONDS, it terminates the session.
		t.out.WriteString("-----------------------------------------------------\nGemStone: Error         Fatal\n" +
			"The stone terminated this session: it held a commit record and did not answer SigAbort (fakestone: the relay is not #transactionless)\n")
		return c.iferrExit()
	}
	return t.serve(s, in)
}

// netldi is the NetLDI the NRS the script builds names: one the expression spells out
// (`#netldi:<name>`, `netldi: '<name>'`); otherwise, as defaultGemNRSFromCurrent (and
// newDefault without gemNRS:) folds it in, the one GEMSTONE_NRS_ALL names, or GemStone's
// default gs64ldi.
func (t *topazRun) netldi() string {
	if m := netldiInNRS.FindStringSubmatch(t.rs.gemNRS); m != nil {
		return m[1]
	}
	if m := netldiSetter.FindStringSubmatch(t.rs.gemNRS); m != nil {
		return m[1]
	}
	if strings.Contains(t.rs.gemNRS, "gemNRS:") && !strings.Contains(t.rs.gemNRS, "defaultGemNRSFromCurrent") {
		return "gs64ldi"
	}
	if m := netldiInNRS.FindStringSubmatch(os.Getenv("GEMSTONE_NRS_ALL")); m != nil {
		return m[1]
	}
	return "gs64ldi"
}

// tempObjKB is the temporary object memory a forked gem gets: the NetLDI's (the product
// default, 50 MB) unless the NRS body the script builds sets GEM_TEMPOBJ_CACHE_SIZE.
func (t *topazRun) tempObjKB() string {
	if t.rs.gemConfig {
		if m := tempObjSetting.FindStringSubmatch(os.Getenv("GEMGATE_GEM_CONFIG")); m != nil {
			return m[1]
		}
	}
	return "50000"
}

// cacheName is the name System cacheName: gives a gem: prefix and user, when the script sends
// one; a name outside 1 to 31 characters raises OutOfRange (2061), which the script's guard
// swallows, and the gem keeps its unnamed name.
func (t *topazRun) cacheName(prefix, user, unnamed string) string {
	n := prefix + user
	if t.rs.clipsNames && len(n) > 31 {
		n = n[:31]
	}
	if prefix == "" || len(n) > 31 {
		return unnamed
	}
	return n
}

// login is the user's GsTsExternalSession login: its gem forked through the NetLDI the NRS
// names, the token checked against the user's JwtSecurityData. done says the run is over.
func (t *topazRun) login(s *session, jwt string, ls map[string]Lock) (code int, done bool) {
	anyNetldi := false
	for _, l := range ls {
		anyNetldi = anyNetldi || (l.Type == "Netldi" && l.running())
	}
	if !anyNetldi {
		return t.greet("login", "Unable to connect to netldi on host 'localhost': connection refused. Number: 4146"), true
	}
	if l, ok := ls[s.netldi]; !ok || l.Type != "Netldi" || !l.running() {
		return t.greet("login", fmt.Sprintf("ERROR 2710, NetLDI service '%s' not found on host 'localhost'", s.netldi)), true
	}
	if msg := t.c.validateJWT(s.user, jwt, time.Now()); msg != "" {
		return t.greet("login", msg), true
	}
	return 0, false
}

// probe is the remote `McpServer name`: whether the user sees the MCP server, and whether
// its gem lives.
func (t *topazRun) probe(s *session) (code int, done bool) {
	if t.c.Fault == "gem_dies_at_probe" {
		s.dead = true
		return t.gemGone(s, s.goneText("the connection to the user's gem was lost: its gem died"), true), true
	}
	if t.c.NoMcpServer {
		desc := "a CompileError occurred (error 1001), undefined symbol  McpServer"
		kind := "sessionLost"
		if t.alive(s, desc) {
			kind = "noMcpServer"
		}
		return t.greet(kind, t.said(desc)), true
	}
	return 0, false
}

// makeReadOnly runs in the user's session what the script sends there for a read-only
// session, statement by statement, as that session would.
func (t *topazRun) makeReadOnly(s *session) (code int, done bool) {
	for _, st := range statements(t.rs.readOnlySource) {
		desc, ok := s.evaluate(st)
		if desc == "" && !ok {
			return fail(2, "fakestone cannot act out %q in the user's session", st), true
		}
		if !ok {
			return t.greet("readOnly", t.said(desc)), true
		}
	}
	return 0, false
}

// serve is the relay's loop: each request line a round, until end of input.
// Between rounds the user's gem waits in its transaction, where the stone may end it
// (viewClock).
func (t *topazRun) serve(s *session, in *bufio.Reader) int {
	clock := t.watchView(s)
	for n := 1; ; {
		line, err := t.readLine(in)
		line = strings.TrimSpace(line)
		if line != "" {
			if t.c.Unicode16 && !t.rs.sourceStringClass {
				line = widen(line)
			}
			s.dead = s.dead || clock.terminated()
			if end, code := t.round(s, line, n); end {
				return code
			}
			clock.after(s, line)
			n++
		}
		if err != nil {
			break // end of input: nil from the read
		}
	}
	// The final logout, and the run block's value, which topaz displays.
	if !t.rs.endsWithTrue {
		t.gemstoneError("a GsTsExternalSession could not print itself: the session is not logged in (printOn: asked the logged-out session for its ids)", "")
		return t.c.iferrExit()
	}
	return 0
}

// readLine reads one request line; through the line editor, a long line comes in pieces.
func (t *topazRun) readLine(in *bufio.Reader) (string, error) {
	if !t.rs.lineEditor {
		return in.ReadString('\n')
	}
	var b strings.Builder
	for b.Len() < lineEditorMax {
		c, err := in.ReadByte()
		if err != nil {
			return b.String(), err
		}
		b.WriteByte(c)
		if c == '\n' {
			break
		}
	}
	return b.String(), nil
}

// widen is what happens to UTF-8 bytes read into a Unicode16 source string: each byte becomes
// a character of its own, so they arrive in the user's session UTF-8-encoded twice.
func widen(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		b.WriteRune(rune(s[i]))
	}
	return b.String()
}

// gemGone is what the relay does when the user's gem died under it: log out (which raises
// unless the relay guards it) and, before the session was ready, name the cause.
func (t *topazRun) gemGone(s *session, desc string, greeting bool) int {
	if !t.rs.guardsLogout {
		t.gemstoneError("GsTsExternalSession>>logout: the session is not logged in", "")
		return t.c.iferrExit()
	}
	if greeting {
		kind := "sessionLost"
		if t.alive(s, desc) {
			kind = "noMcpServer"
		}
		return t.greet(kind, t.said(desc))
	}
	return 0
}

// alive is the script's `alive` block after an error with this description: every term it
// holds must answer true. isLoggedIn answers as the stone's configuration says (see
// Config.IsLoggedIn); an error in the block answers false.
func (t *topazRun) alive(s *session, desc string) bool {
	l := t.rs.alive
	if !l.loggedIn && !l.notInFlight && !l.notFatal {
		return false
	}
	if l.loggedIn {
		switch t.c.IsLoggedIn {
		case "dnu":
			return false // MessageNotUnderstood, answered false by the block's guard
		case "stale":
		default:
			if s.dead {
				return false
			}
		}
	}
	if l.notInFlight && s.inFlight {
		return false
	}
	return !l.notFatal || !strings.Contains(desc, fatalMarker)
}

// said is what the client is told of an error: with the script's `said`, a fatal-band text
// without the session's description (written whole to stderr), else the whole text.
func (t *topazRun) said(desc string) string {
	k := strings.Index(desc, fatalMarker)
	if k < 0 || !t.rs.hidesFatalText {
		return desc
	}
	n := desc[k+len(fatalMarker):]
	n = n[:len(n)-len(strings.TrimLeft(n, "0123456789"))]
	fmt.Fprintf(os.Stderr, "gemgate relay: GemStone error %s: %s\n", n, desc)
	return desc[:k] + " (GemStone error " + n + ")"
}

// round is one round of the script's loop: handleJsonString: in the user's session with the
// nonce appended, fetched through the (possibly defective) external-session buffer, checked.
// end says the run is over, with topaz's exit status.
func (t *topazRun) round(s *session, line string, n int) (end bool, code int) {
	nonce := fmt.Sprintf(" gemgate-nonce-%d", n)
	resp, outcome, desc := s.execute(line)
	if outcome != answered {
		kept := t.alive(s, desc)
		text := t.said(desc)
		id := requestID(line)
		if id != nil && (t.rs.answersEveryID || isInteger(id)) {
			msg, kind := "the GemStone session ended: "+text, "sessionLost"
			if kept {
				msg, kind = "GemStone raised an error the MCP server did not handle (the session goes on): "+text, "gemstoneError"
			}
			b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": id, "error": map[string]any{"code": -32603, "message": msg, "data": map[string]any{"kind": kind}}})
			t.emitGemStoneText(string(b))
		}
		switch {
		case kept:
			return false, 0
		case s.dead:
			return true, t.gemGone(s, desc, false)
		default:
			return true, 0 // the relay logs the live session out and ends
		}
	}
	fetched := s.fetch(resp + nonce)
	if s.cfg.RawRelay {
		if len(fetched) > len(nonce) {
			t.say(fetched[:len(fetched)-len(nonce)])
		}
		return false, 0
	}
	if !strings.HasSuffix(fetched, nonce) {
		t.say(fmt.Sprintf(`{"gemgate":"corrupt","defect":51438,"bytes":%d}`, len(fetched)))
		return false, 0
	}
	r := strings.TrimSuffix(fetched, nonce)
	if t.c.Fault == "dies_mid_answer" && strings.Contains(line, `"tools/call"`) {
		t.out.WriteString(r[:len(r)/2]) // the rest, and the newline, never come
		t.out.Flush()
		os.Exit(137)
	}
	if r != "" {
		t.answer(line, r)
	}
	return false, 0
}

// answer writes the answer to a request line, unless the script bounds answers
// (GEMGATE_MAX_ANSWER_BYTES) and it is longer: then the call's error, naming the size.
func (t *topazRun) answer(line, r string) {
	max, err := strconv.Atoi(os.Getenv("GEMGATE_MAX_ANSWER_BYTES"))
	if !t.rs.boundsAnswers || err != nil || len(r) <= max {
		t.say(r)
		return
	}
	if id := requestID(line); id != nil {
		msg := fmt.Sprintf("the answer is %d bytes, longer than the %d gemgate takes from GemStone; it was not relayed, and the session goes on", len(r), max)
		b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": id,
			"error": map[string]any{"code": -32603, "message": msg, "data": map[string]any{"kind": "answerTooLarge", "bytes": len(r)}}})
		t.say(string(b))
	}
}

// requestID is the request's id as JsonParser reads it: nil when absent or unreadable.
func requestID(line string) json.RawMessage {
	var m struct{ ID json.RawMessage }
	if json.Unmarshal([]byte(line), &m) != nil || len(m.ID) == 0 || string(m.ID) == "null" {
		return nil
	}
	return m.ID
}

func isInteger(id json.RawMessage) bool {
	_, err := strconv.ParseInt(string(id), 10, 64)
	return err == nil
}

func parseINI(text string) (stone, user, pass string) {
	for _, l := range strings.Split(text, "\n") {
		f := strings.Fields(l)
		if len(f) < 3 || !strings.EqualFold(f[0], "set") {
			continue
		}
		for i := 1; i+1 < len(f); i += 2 {
			switch k := strings.ToLower(f[i]); {
			case strings.HasPrefix(k, "gem"):
				stone = f[i+1]
			case k == "u" || strings.HasPrefix(k, "user"):
				user = f[i+1]
			case k == "p" || strings.HasPrefix(k, "pass"):
				pass = f[i+1]
			}
		}
	}
	return
}

// validateJWT checks a token as the stone does at login, against the named user's
// JwtSecurityData, and answers the stone's message for a refusal ("" to accept).
func (c Config) validateJWT(name, jwt string, now time.Time) string {
	u, ok := c.Users[name]
	if !ok {
		return fmt.Sprintf("User '%s' not found or not enabled for JWT authentication", name)
	}
	parts := strings.Split(jwt, ".")
	if len(parts) != 3 {
		return "Invalid JWT: not three parts"
	}
	raw, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil {
		return "Invalid JSON in JWT payload"
	}
	var claims map[string]any
	if err := json.Unmarshal(raw, &claims); err != nil {
		return "Invalid JSON in JWT payload"
	}
	exp, ok := claims["exp"].(float64)
	if !ok || now.Unix() >= int64(exp) {
		return "Invalid JWT: token expired (exp)"
	}
	aud, ok := claims["aud"].(string) // measured on 3.7.5: an array fails even when every element is valid
	if !ok || !accepts(u.Audiences, aud) {
		return "Invalid or missing aud"
	}
	if iss, _ := claims["iss"].(string); !accepts(u.Issuers, iss) {
		return "Invalid or missing issuer (iss)"
	}
	claim := u.Claim
	if claim == "" {
		claim = "sub"
	}
	if v, _ := claims[claim].(string); v != name {
		return fmt.Sprintf("JWT user id claim '%s' does not match user '%s'", claim, name)
	}
	return ""
}

func accepts(valid []string, v string) bool {
	return v != "" && (slices.Contains(valid, "*") || slices.Contains(valid, v))
}

func atLeast(v, min string) bool {
	var a, b [4]int
	fmt.Sscanf(v, "%d.%d.%d.%d", &a[0], &a[1], &a[2], &a[3])
	fmt.Sscanf(min, "%d.%d.%d.%d", &b[0], &b[1], &b[2], &b[3])
	for i := range a {
		if a[i] != b[i] {
			return a[i] > b[i]
		}
	}
	return true
}
