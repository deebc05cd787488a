package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
)

// The statements of scripts/gemstone-jwt-keys' command file, and what the stone does with them.
var (
	guardedRemove = regexp.MustCompile(`^\[System removeJwtKeyWithId: ('(?:[^']|'')*')\] on: Error do: \[:e \| nil\]\.$`)
	plainRemove   = regexp.MustCompile(`^System removeJwtKeyWithId: ('(?:[^']|'')*')\.$`)
	addKey        = regexp.MustCompile(`^System addJwtKey: \(GsTlsPublicKey newFromPemFile: ('(?:[^']|'')*')\) withId: ('(?:[^']|'')*')\.$`)
	sentinel      = regexp.MustCompile(`^GsFile stdout nextPutAll: ('(?:[^']|'')*'), (\w+) printString; lf; flush\.$`)
	counterInit   = regexp.MustCompile(`^(\w+) := 0\.$`)
	counterStep   = regexp.MustCompile(`^(\w+) := (\w+) \+ 1\.$`)
)

// keyRegistry is the stone's in-memory JWT keys (System addJwtKey:withId:), kept in the global
// directory so that it outlives one topaz run, as the stone outlives its sessions.
func keyRegistry() string { return filepath.Join(globalDir(), "fakestone-jwt-keys.json") }

func loadKeys() map[string]string {
	keys := map[string]string{}
	if b, err := os.ReadFile(keyRegistry()); err == nil {
		json.Unmarshal(b, &keys)
	}
	return keys
}

func unquote(lit string) string { return strings.ReplaceAll(lit[1:len(lit)-1], "''", "'") }

// adminScript acts out a command file of gemstone-jwt-keys: `iferr 1 exit 3`, `login`, one
// `run` block, `%`, `logout`, `exit 0`. As on a real stone, System addJwtKey:withId: raises
// for an id already registered and removeJwtKeyWithId: for one that is not; an error nothing
// handles prints topaz's report and exits through iferr, whose status (3, or 0 under the
// topaz versions GemDB measured) is the stone's iferr_exit.
func (t *topazRun) adminScript(src string) int {
	keys := loadKeys()
	counters := map[string]int{}
	raise := func(text string) int {
		t.gemstoneError(text, "")
		return t.c.iferrExit()
	}
	inRun := false
	for _, raw := range strings.Split(stripComments(src), "\n") {
		l := strings.TrimSpace(raw)
		switch {
		case l == "" || strings.HasPrefix(l, "!") || l == "iferr 1 exit 3" || l == "login" || l == "logout" || l == "exit 0":
			continue
		case l == "run":
			inRun = true
			continue
		case l == "%":
			inRun = false
			continue
		case !inRun:
			return fail(2, "admin script: unknown topaz command %q", l)
		}
		if m := guardedRemove.FindStringSubmatch(l); m != nil {
			delete(keys, unquote(m[1]))
		} else if m := plainRemove.FindStringSubmatch(l); m != nil {
			kid := unquote(m[1])
			if _, ok := keys[kid]; !ok {
				return raise(fmt.Sprintf("System removeJwtKeyWithId: no key with id '%s'", kid))
			}
			delete(keys, kid)
		} else if m := addKey.FindStringSubmatch(l); m != nil {
			path, kid := unquote(m[1]), unquote(m[2])
			if _, ok := keys[kid]; ok {
				return raise(fmt.Sprintf("System addJwtKey:withId: a key with id '%s' is already registered", kid))
			}
			pem, err := os.ReadFile(path)
			if err != nil || !strings.Contains(string(pem), "-----BEGIN PUBLIC KEY-----") {
				return raise(fmt.Sprintf("GsTlsPublicKey newFromPemFile: '%s' is not a PEM public key", path))
			}
			keys[kid] = strings.TrimSpace(string(pem))
			b, _ := json.Marshal(keys)
			if err := os.WriteFile(keyRegistry(), b, 0o600); err != nil {
				return fail(2, "key registry: %v", err)
			}
		} else if m := counterInit.FindStringSubmatch(l); m != nil {
			counters[m[1]] = 0
		} else if m := counterStep.FindStringSubmatch(l); m != nil && m[1] == m[2] {
			counters[m[1]]++
		} else if m := sentinel.FindStringSubmatch(l); m != nil {
			t.say(fmt.Sprintf("%s%d", unquote(m[1]), counters[m[2]]))
		} else if l == "true" || strings.HasPrefix(l, "|") {
			continue
		} else {
			return fail(2, "admin script: fakestone cannot act out %q", l)
		}
	}
	b, _ := json.Marshal(keys)
	if err := os.WriteFile(keyRegistry(), b, 0o600); err != nil {
		return fail(2, "key registry: %v", err)
	}
	return 0
}
