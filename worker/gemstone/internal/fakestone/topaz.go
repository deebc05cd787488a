package main

import (
	"bufio"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"strings"
	"time"
)

// scriptNeeds are the relay script's parts this stand-in acts out; a script without them is
// not the relay it imitates.
var scriptNeeds = []string{"iferr 1 exit", "login", "GEMGATE_CREDENTIAL", "GEMGATE_READ_ONLY", "jwtPassword:",
	"disableCommitsWithReason:", "sessionReadOnly:", "nbExecute:", "lastResult", "handleJsonString:", "nextLineTo:", "gemgate-nonce-", "51438"}

func fail(code int, format string, a ...any) int {
	fmt.Fprintf(os.Stderr, "fakestone topaz: "+format+"\n", a...)
	return code
}

// topaz acts out `topaz -l -q -I <ini> -S <script> -- --user <name>`.
func topaz(args []string) int {
	if len(args) < 7 || args[0] != "-l" || args[1] != "-q" || args[2] != "-I" || args[4] != "-S" || args[6] != "--" {
		return fail(2, "expected -l -q -I <ini> -S <script> -- <args>, got %q", args)
	}
	ini, script, rest := args[3], args[5], args[7:]
	if os.Getenv("GEMSTONE") != home() {
		return fail(2, "GEMSTONE is %q, not this product %q", os.Getenv("GEMSTONE"), home())
	}
	if os.Getenv("GEMSTONE_GLOBAL_DIR") == "" {
		return fail(2, "GEMSTONE_GLOBAL_DIR is not set")
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
	for _, s := range scriptNeeds {
		if !strings.Contains(string(src), s) {
			return fail(2, "script %s lacks %q", script, s)
		}
	}
	stone, user, pass := parseINI(string(iniText))
	out := bufio.NewWriter(os.Stdout)
	defer out.Flush()
	say := func(line string) { out.WriteString(line + "\n"); out.Flush() }

	// The service login: linked, so the stone is found through its lock file alone.
	ls := locks()
	if l, ok := ls[stone]; !ok || l.Type != "Stone" {
		say("-----------------------------------------------------")
		say("GemStone: Error         Nonfatal")
		say(fmt.Sprintf("could not find server '%s' on host 'localhost' because service not found, getaddrinfo failed, EAI error 8", stone))
		say("Error Category: 231169 [GemStone] Number: 4065  Arg Count: 1 Context : 20")
		return 3
	}
	if user != c.ServiceUser || pass != c.ServicePassword {
		say("-----------------------------------------------------")
		say("GemStone: Error         Nonfatal")
		say("The userId/password combination is invalid or expired.")
		say("Error Category: 231169 [GemStone] Number: 4051  Arg Count: 1 Context : 20")
		return 3
	}
	say("successful login")
	say("fileformat is now utf8")

	greet := func(kind, msg string) int {
		b, _ := json.Marshal(map[string]string{"gemgate": "error", "kind": kind, "message": msg})
		say(string(b))
		return 0
	}
	name := ""
	if i := slices.Index(rest, "--user"); i >= 0 && i+1 < len(rest) {
		name = rest[i+1]
	}
	if name == "" || name != os.Getenv("GEMGATE_USER") {
		return greet("config", "the relay needs --user <name> equal to GEMGATE_USER")
	}
	jwt := os.Getenv("GEMGATE_CREDENTIAL")
	if jwt == "" {
		return greet("config", "no credential in GEMGATE_CREDENTIAL; set worker_credential to exchange (or passthrough)")
	}
	readOnly := os.Getenv("GEMGATE_READ_ONLY") == "1"
	if !atLeast(c.Version, "3.7.5") {
		return greet("versionTooOld", "this GemStone has no JWT login (GsTsExternalSession>>jwtPassword:)")
	}
	// GsTsExternalSession forks the user's gem through netldi.
	hasNetldi := false
	for _, l := range ls {
		hasNetldi = hasNetldi || l.Type == "Netldi"
	}
	if !hasNetldi {
		return greet("login", "Unable to connect to netldi on host 'localhost': connection refused. Number: 4146")
	}
	if msg := c.validateJWT(name, jwt, time.Now()); msg != "" {
		return greet("login", msg)
	}
	if c.NoMcpServer {
		return greet("noMcpServer", "a CompileError occurred (error 1001), undefined symbol  McpServer")
	}
	b, _ := json.Marshal(map[string]any{"gemgate": "ready", "user": name, "readOnly": readOnly})
	say(string(b))

	s := &session{cfg: c, user: name, stone: stone, readOnly: readOnly && c.Server != "unreleased", commitsDisabled: readOnly}
	in := bufio.NewReaderSize(os.Stdin, 1<<20)
	for n := 1; ; {
		line, err := in.ReadString('\n')
		line = strings.TrimSpace(line)
		if line != "" {
			if s.relay(line, n, say) {
				return 0
			}
			n++
		}
		if err != nil {
			return 0 // end of input: log out, exit 0
		}
	}
}

// relay is one round of the script's loop: handleJsonString: in the user's session with the
// nonce appended, fetched through the (possibly defective) external-session buffer, checked.
func (s *session) relay(line string, n int, say func(string)) (end bool) {
	nonce := fmt.Sprintf(" gemgate-nonce-%d", n)
	resp, stop := s.handle(line)
	if stop {
		return true
	}
	fetched := s.fetch(resp + nonce)
	if s.cfg.RawRelay {
		if len(fetched) > len(nonce) {
			say(fetched[:len(fetched)-len(nonce)])
		}
		return false
	}
	if !strings.HasSuffix(fetched, nonce) {
		say(fmt.Sprintf(`{"gemgate":"corrupt","defect":51438,"bytes":%d}`, len(fetched)))
		return false
	}
	if r := strings.TrimSuffix(fetched, nonce); r != "" {
		say(r)
	}
	return false
}

// fetch acts out GsTsExternalSession>>resolveResult: on a stone with #51438: the first 1024
// bytes land in a buffer that never shrinks, and the whole result is refetched only when the
// buffer has to grow, so a result between 1025 bytes and the buffer's size keeps a stale tail.
func (s *session) fetch(result string) string {
	if !s.cfg.Defect51438 {
		return result
	}
	if len(s.buf) < 1024 {
		s.buf = make([]byte, 1024)
	}
	if len(result) > len(s.buf) {
		s.buf = []byte(result)
		return result
	}
	copy(s.buf, result[:min(len(result), 1024)])
	return string(s.buf[:len(result)])
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
