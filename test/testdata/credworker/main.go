// Command credworker is a minimal stdio MCP server for gemgate's end-to-end tests. It
// answers initialize, tools/list and tools/call "env", which reports what the gateway put
// in its environment: the GEMGATE_* names, the user, subject and scopes, its arguments, and whether a credential was handed over
// (on GEMGATE_CREDENTIAL_FD, or in GEMGATE_CREDENTIAL) with its length, SHA-256 and decoded aud/sub/act. It never prints the credential itself.
package main

import (
	"bufio"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
)

type message struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id,omitempty"`
	Method  string          `json:"method,omitempty"`
	Params  json.RawMessage `json:"params,omitempty"`
	Result  any             `json:"result,omitempty"`
	Error   any             `json:"error,omitempty"`
}

func main() {
	in := bufio.NewScanner(os.Stdin)
	in.Buffer(nil, 16<<20)
	out := json.NewEncoder(os.Stdout)
	for in.Scan() {
		var m message
		if json.Unmarshal(in.Bytes(), &m) != nil || m.ID == nil || m.Method == "" {
			continue // notifications and answers need nothing
		}
		resp := message{JSONRPC: "2.0", ID: m.ID}
		switch m.Method {
		case "initialize":
			var p struct {
				ProtocolVersion string `json:"protocolVersion"`
			}
			json.Unmarshal(m.Params, &p)
			resp.Result = map[string]any{
				"protocolVersion": p.ProtocolVersion,
				"capabilities":    map[string]any{"tools": map[string]any{}},
				"serverInfo":      map[string]any{"name": "credworker", "version": "1"},
			}
		case "ping":
			resp.Result = map[string]any{}
		case "tools/list":
			resp.Result = map[string]any{"tools": []any{map[string]any{
				"name": "env", "description": "what the gateway passed in the environment",
				"inputSchema": map[string]any{"type": "object"},
				"annotations": map[string]any{"readOnlyHint": true},
			}}}
		case "tools/call":
			report, _ := json.Marshal(envReport())
			resp.Result = map[string]any{"content": []any{map[string]any{"type": "text", "text": string(report)}}}
		default:
			resp.Error = map[string]any{"code": -32601, "message": "method not found"}
		}
		out.Encode(resp)
	}
}

var (
	credOnce         sync.Once
	cred, credSource string
)

func envReport() map[string]any {
	var names []string
	for _, kv := range os.Environ() {
		if name, _, _ := strings.Cut(kv, "="); strings.HasPrefix(name, "GEMGATE_") {
			names = append(names, name)
		}
	}
	slices.Sort(names)
	r := map[string]any{"gemgate_env": names, "user": os.Getenv("GEMGATE_USER"),
		"subject": os.Getenv("GEMGATE_SUBJECT"), "scopes": os.Getenv("GEMGATE_SCOPES"), "read_only": os.Getenv("GEMGATE_READ_ONLY"), "args": os.Args[1:]}
	// Read once, at the first call: the descriptor holds it only once.
	credOnce.Do(func() { cred, credSource = credential() })
	r["credential_set"] = cred != ""
	r["credential_source"] = credSource
	if cred == "" {
		return r
	}
	sum := sha256.Sum256([]byte(cred))
	r["credential_len"] = len(cred)
	r["credential_sha256"] = hex.EncodeToString(sum[:])
	cmdline, _ := os.ReadFile("/proc/self/cmdline")
	r["credential_in_cmdline"] = strings.Contains(string(cmdline), cred)
	parts := strings.Split(cred, ".")
	if len(parts) == 3 {
		if payload, err := base64.RawURLEncoding.DecodeString(parts[1]); err == nil {
			var claims struct {
				Aud any    `json:"aud"`
				Sub string `json:"sub"`
				Azp string `json:"azp"`
				Act *struct {
					Sub string `json:"sub"`
				} `json:"act"`
			}
			if json.Unmarshal(payload, &claims) == nil {
				r["aud"], r["sub"], r["azp"] = claims.Aud, claims.Sub, claims.Azp
				if claims.Act != nil {
					r["act_sub"] = claims.Act.Sub
				}
			}
		}
	}
	return r
}

// credential reads the worker credential as gemgate hands it over: from the descriptor named
// by GEMGATE_CREDENTIAL_FD (read to its end once), or from GEMGATE_CREDENTIAL when gemgate is
// configured to put it in the environment.
func credential() (string, string) {
	if fd, err := strconv.Atoi(os.Getenv("GEMGATE_CREDENTIAL_FD")); err == nil {
		f := os.NewFile(uintptr(fd), "credential")
		defer f.Close()
		b, _ := io.ReadAll(io.LimitReader(f, 1<<20))
		return string(b), "fd"
	}
	if cred := os.Getenv("GEMGATE_CREDENTIAL"); cred != "" {
		return cred, "env"
	}
	return "", ""
}
