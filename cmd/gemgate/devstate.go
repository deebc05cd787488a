package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/gemgate/gemgate/auth/devissuer"
	"github.com/gemgate/gemgate/internal/private"
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
	// A predictable data_dir (under /tmp, with no home directory) may be a link another
	// account put there first.
	if err := private.MkdirAll(f.dir, 0o700); err != nil {
		return s, fmt.Errorf("development issuer state: %w; choose another data_dir", err)
	}
	// Whoever can write the folder or the key can mint tokens this gateway accepts; whoever
	// can write the folder that holds it can rename it away and put another in its place.
	if err := private.Folder(filepath.Dir(f.dir)); err != nil {
		return s, fmt.Errorf("development issuer state: %w; choose another data_dir", err)
	}
	for _, p := range []string{f.dir, f.key, f.state} {
		if err := private.Owned(p); err != nil {
			return s, fmt.Errorf("development issuer state: %w; delete %s to start afresh", err, f.dir)
		}
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

// devExchangeAudience is the backend a development issuer exchanges tokens for when
// exchange_audience names none: GemStone's.
const devExchangeAudience = "gemstone"

// startKeptIssuer starts the development issuer of opts (gemgate dev's or gemgate issuer's)
// with the key, address and client secrets kept in dataDir, so tokens and client credentials
// printed before a restart keep working until they expire: secrets of clients known from the
// last start replace those of opts.Clients. At 127.0.0.1:0, the default, the issuer tries the
// port of the last start first (the issuer URL is every token's iss); addrHint names the
// settings that change opts.Addr, for the error when it cannot listen. It returns the issuer
// and its clients with their secrets.
func startKeptIssuer(dataDir, addrHint string, opts devissuer.Options) (*devissuer.Issuer, []devissuer.Client, error) {
	files := devStatePaths(dataDir)
	state, err := loadDevState(files)
	if err != nil {
		return nil, nil, err
	}
	clients := append([]devissuer.Client(nil), opts.Clients...)
	for i, cl := range clients {
		if s := state.Secrets[cl.ID]; s != "" {
			clients[i].Secret = s
		}
	}
	opts.Clients, opts.KeyFile = clients, files.key
	if len(opts.ExchangeAudiences) == 0 {
		opts.ExchangeAudiences = []string{devExchangeAudience}
	}
	var issuer *devissuer.Issuer
	if opts.Addr == defaults().DevIssuerListen && state.IssuerAddr != "" {
		// The port of the last start, so the issuer URL stays the same; a free one if it is
		// taken now.
		kept := opts
		kept.Addr = state.IssuerAddr
		issuer, _ = devissuer.Start(kept)
	}
	if issuer == nil {
		if issuer, err = devissuer.Start(opts); err != nil {
			return nil, nil, fmt.Errorf("development issuer: %w (change its address with %s)", err, addrHint)
		}
	}
	state.IssuerAddr = strings.TrimPrefix(issuer.URL(), "http://")
	// Secrets of clients this start does not have (gemgate issuer's extra users, when dev
	// shares the data directory) stay, so that a later start can reuse them.
	if state.Secrets == nil {
		state.Secrets = map[string]string{}
	}
	for _, cl := range clients {
		state.Secrets[cl.ID] = cl.Secret
	}
	b, err := json.MarshalIndent(state, "", "  ")
	if err == nil {
		err = private.WriteFile(files.state, append(b, '\n'), 0o600)
	}
	if err != nil {
		issuer.Close()
		return nil, nil, fmt.Errorf("development issuer state: %w", err)
	}
	return issuer, clients, nil
}
