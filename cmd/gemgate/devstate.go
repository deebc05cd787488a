package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// devStateDir is where gemgate dev keeps its issuer between starts, inside the data
// directory. The leading dot keeps it apart from the demo's per-user folders, whose names
// never start with one.
const devStateDir = ".dev-issuer"

// devState is what gemgate dev remembers so that what it printed keeps working after a
// restart: the issuer's address (its URL is every token's iss) and the client secrets. The
// signing key is kept next to it, in key.pem.
type devState struct {
	IssuerAddr string            `json:"issuer_addr,omitempty"`
	Secrets    map[string]string `json:"client_secrets,omitempty"`
}

type devStateFiles struct{ dir, key, state string }

func devStatePaths(dataDir string) devStateFiles {
	dir := filepath.Join(dataDir, devStateDir)
	return devStateFiles{dir: dir, key: filepath.Join(dir, "key.pem"), state: filepath.Join(dir, "state.json")}
}

// loadDevState reads the kept state; none yet is the zero state.
func loadDevState(f devStateFiles) (devState, error) {
	var s devState
	if err := os.MkdirAll(f.dir, 0o700); err != nil {
		return s, fmt.Errorf("development issuer state: %w", err)
	}
	b, err := os.ReadFile(f.state)
	if errors.Is(err, fs.ErrNotExist) {
		return s, nil
	}
	if err != nil {
		return s, fmt.Errorf("development issuer state: %w", err)
	}
	if err := json.Unmarshal(b, &s); err != nil {
		return devState{}, fmt.Errorf("development issuer state %s: %w; delete it to start afresh", f.state, err)
	}
	return s, nil
}

func (s devState) save(f devStateFiles) error {
	b, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		return err
	}
	return writeFileAtomic(f.state, append(b, '\n'), 0o600)
}
