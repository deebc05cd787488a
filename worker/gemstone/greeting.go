package gemstone

import (
	"bytes"
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strings"

	textclip "github.com/gemgate/gemgate/internal/clip"

	"github.com/gemgate/gemgate/worker"
)

// StrictError is what a call gets when the relay's answer is not a well-formed answer to it:
// the shape kernel defect #51438 gives a result over 1,024 bytes on stones before 3.7.4.1.
// A topaz error report after the greeting takes the same path: the message points at the log.
const StrictError = "GemStone returned a corrupted answer (kernel defect #51438: a result over 1,024 bytes " +
	"fetched through GsTsExternalSession came back with a stale tail). This call failed and was not " +
	"relayed; later large answers in this session may fail too. Fix: upgrade the stone to GemStone " +
	"3.7.4.1 or later (3.7.5 or later for JWT login). If the stone is that recent, topaz printed something " +
	"other than an answer; gemgate's log has the line."

// Apply makes spec a GemStone relay's: a fresh greeting parser, and strict answers.
func Apply(spec *worker.Spec) {
	spec.Greeting = NewGreeting()
	spec.Strict = true
	spec.StrictError = StrictError
}

// Refusal is why the relay could not open the session, as its greeting said.
type Refusal struct {
	Kind   string // config, versionTooOld, login, noMcpServer, sessionLost, readOnly, stoneUnreachable, topaz
	Detail string // what GemStone or topaz said
}

func (r *Refusal) Error() string {
	if r.Kind == "login" {
		return explainLogin(r.Detail)
	}
	text, ok := refusalFormat[r.Kind]
	if !ok {
		text = "topaz failed before the GemStone session was ready: %s. Run `gemgate check`."
	}
	return fmt.Sprintf(text, r.Detail)
}

// refusalFormat explains a Refusal of each Kind but login; %s is its Detail.
var refusalFormat = map[string]string{
	"versionTooOld":    "GemStone cannot log this session in: the stone has no JWT login (%s). JWT login arrived as a preview in GemStone 3.7.4; gemgate's GemStone worker, like GemTalk's MCP server, requires 3.7.5 or later.",
	"noMcpServer":      "GemStone logged the user in, but the native GemStone MCP server is not visible to that user (%s). Load it (install.sh) and put its dictionary in the user's symbol list; see docs/gemstone.md.",
	"sessionLost":      "GemStone logged the user in, but the user's session ended before it was ready (%s): its gem is gone. Check the stone's and the NetLDI's logs; run `gemgate check`.",
	"readOnly":         "GemStone could not make the session read-only (%s); the session was not opened.",
	"stoneUnreachable": "topaz cannot reach the stone: %s. The usual cause is a wrong GEMSTONE_GLOBAL_DIR (set gemstone_global_dir, or leave it empty so gemgate asks gslist); run `gemgate check`.",
	"config":           "the GemStone relay is misconfigured: %s",
}

// explainLogin turns what GemStone said about a refused JWT login into advice.
func explainLogin(said string) string {
	l := strings.ToLower(said)
	// Each is looked for as whole words: GemStone's text names the user, and a name such as
	// claude, mickey or kidd holds aud, key or kid.
	has := func(s ...string) bool {
		return slices.ContainsFunc(s, func(x string) bool { return hasWords(l, x) })
	}
	var why string
	switch {
	// NetLDI first: its refusal says "not found" too.
	case has("netldi", "4065", "could not find server", "maximum number of users"):
		why = "the stone could not start a session for the user (a GsTsExternalSession login forks the user's gem through a running netldi, the one GEMSTONE_NRS_ALL names, and needs a free login slot); run `gemgate check`"
	case has("aud", "audience", "audiences"):
		why = "GemStone rejected the token's audience. The token must carry aud as a single string that is listed in the user's JwtSecurityData; " +
			"GemStone refuses an array of audiences even when one matches (Keycloak's stock \"audience resolve\" mapper adds \"account\"). " +
			"Use worker_credential: exchange with exchange_audience set to the audience GemStone expects"
	case has("expired", "exp claim", "(exp)"):
		why = "the token had expired when GemStone checked it; sign in again, and check the clocks of the stone host and the issuer"
	case has("issuer", "(iss)", "iss claim"):
		why = "GemStone does not accept the token's issuer; add it to the user's JwtSecurityData (addIssuer:)"
	case has("signature", "kid", "key", "keys"):
		why = "GemStone does not trust the key that signed the token; register the issuer's keys with System addJwtKey:withId: (they are lost at every stone restart; see docs/gemstone.md)"
	case has("not found", "no such user", "does not exist", "not enabled", "unknown user"):
		why = "GemStone has no JWT-enabled user of that name; create it and enableJwtAuthenticationWith: (docs/gemstone.md)"
	case has("claim", "user id"):
		why = "the token's user claim does not name this GemStone user; user_claim must match the userIdKey of the user's JwtSecurityData"
	default:
		why = "GemStone refused the login"
	}
	return "GemStone refused the login: " + why + ". GemStone said: " + said
}

// hasWords reports whether text holds words as a whole: neither end joined to a letter or
// digit of the text around it.
func hasWords(text, words string) bool {
	word := func(i int) bool { return i >= 0 && i < len(text) && isWordByte(text[i]) }
	for i := 0; ; {
		k := strings.Index(text[i:], words)
		if k < 0 {
			return false
		}
		k += i
		if !(isWordByte(words[0]) && word(k-1)) && !(isWordByte(words[len(words)-1]) && word(k+len(words))) {
			return true
		}
		i = k + 1
	}
}

func isWordByte(c byte) bool { return c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c >= 0x80 }

type greetingLine struct {
	Gemgate  string `json:"gemgate"`
	Kind     string `json:"kind"`
	Message  string `json:"message"`
	User     string `json:"user"`
	ReadOnly bool   `json:"readOnly"`
}

// gemstoneErrorNumber finds topaz's error report ("... Number: 4065 ...").
var gemstoneErrorNumber = regexp.MustCompile(`Number:\s*(\d+)`)

// NewGreeting answers a parser for one relay's greeting, which remembers the chatter it saw:
// topaz chatter is skipped, a ready line ends the greeting, an error line or a topaz error
// report refuses the session.
func NewGreeting() func(line []byte) (done bool, err error) {
	var chatter []string
	return func(line []byte) (bool, error) {
		if line == nil {
			// Stdout ended before the relay was ready: say what topaz printed last.
			detail := "topaz exited before the relay was ready"
			if len(chatter) > 0 {
				detail += ": " + strings.Join(chatter, " / ")
			}
			return false, &Refusal{Kind: "exited", Detail: detail}
		}
		line = bytes.TrimSpace(line)
		if bytes.HasPrefix(line, []byte("{")) {
			var g greetingLine
			if json.Unmarshal(line, &g) == nil && g.Gemgate != "" {
				switch g.Gemgate {
				case "ready":
					return true, nil
				case "error":
					return false, &Refusal{Kind: g.Kind, Detail: clip(g.Message)}
				}
			}
		}
		s := clip(string(line))
		chatter = append(chatter, s)
		if len(chatter) > 6 {
			chatter = chatter[len(chatter)-6:]
		}
		if m := gemstoneErrorNumber.FindStringSubmatch(s); m != nil {
			kind := "topaz"
			if m[1] == "4065" || strings.Contains(strings.Join(chatter, " "), "could not find server") {
				kind = "stoneUnreachable"
			}
			return false, &Refusal{Kind: kind, Detail: strings.Join(chatter, " / ")}
		}
		return false, nil
	}
}

func clip(s string) string { return textclip.String(s, 400) }
