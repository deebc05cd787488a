// Command kccredworker is a test worker for gemgate's Keycloak suite: a minimal MCP server on
// stdio with one tool, "credential", which answers with the decoded claims (aud, sub,
// preferred_username, azp, scope) and the SHA-256 of the credential gemgate started it with
// (on GEMGATE_CREDENTIAL_FD, or in GEMGATE_CREDENTIAL). It never prints the credential itself. When KCCREDWORKER_DUMP names a file, it writes the
// raw credential there (mode 0600) so that the test can search gemgate's logs for it.
package main

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log"
	"os"
	"strconv"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// report is what the credential tool answers.
type report struct {
	Present           bool   `json:"present"`
	SHA256            string `json:"sha256,omitempty"`
	Aud               any    `json:"aud,omitempty"`
	Sub               string `json:"sub,omitempty"`
	PreferredUsername string `json:"preferred_username,omitempty"`
	Azp               string `json:"azp,omitempty"`
	Scope             string `json:"scope,omitempty"`
	Error             string `json:"error,omitempty"`
}

func main() {
	cred, _ := credential()
	if path := os.Getenv("KCCREDWORKER_DUMP"); path != "" && cred != "" {
		if err := os.WriteFile(path, []byte(cred), 0o600); err != nil {
			log.Fatalf("kccredworker: writing the dump file: %v", err)
		}
	}
	rep := describe(cred)

	server := mcp.NewServer(&mcp.Implementation{Name: "kccredworker", Version: "1"}, nil)
	mcp.AddTool(server, &mcp.Tool{Name: "credential", Description: "the claims of the worker credential"},
		func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
			b, err := json.Marshal(rep)
			if err != nil {
				return nil, nil, err
			}
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: string(b)}}}, nil, nil
		})
	if err := server.Run(context.Background(), &mcp.StdioTransport{}); err != nil && !errors.Is(err, context.Canceled) {
		log.Printf("kccredworker: %v", err)
	}
}

// describe decodes the JWT payload of cred without verifying it (the worker's backend would).
func describe(cred string) report {
	if cred == "" {
		return report{}
	}
	sum := sha256.Sum256([]byte(cred))
	rep := report{Present: true, SHA256: hex.EncodeToString(sum[:])}
	parts := strings.Split(cred, ".")
	if len(parts) != 3 {
		rep.Error = fmt.Sprintf("not a JWT: %d parts", len(parts))
		return rep
	}
	payload, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil {
		rep.Error = "payload is not base64url"
		return rep
	}
	var claims struct {
		Aud               any    `json:"aud"`
		Sub               string `json:"sub"`
		PreferredUsername string `json:"preferred_username"`
		Azp               string `json:"azp"`
		Scope             string `json:"scope"`
	}
	if err := json.Unmarshal(payload, &claims); err != nil {
		rep.Error = "payload is not JSON"
		return rep
	}
	rep.Aud, rep.Sub, rep.PreferredUsername, rep.Azp, rep.Scope = claims.Aud, claims.Sub, claims.PreferredUsername, claims.Azp, claims.Scope
	return rep
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
