package gemstone

import (
	"bytes"
	"crypto/sha256"
	_ "embed"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/gemgate/gemgate/internal/private"
)

// relayScript is the topaz command file every session runs.
//
//go:embed relay.tpz
var relayScript []byte

// InstallScript writes the relay script into dir (created 0700 when missing) under a name
// that carries its hash, and answers its path. Every session's topaz runs it with the user's
// token in hand, so whoever can change it reads every user's token: the folder must be this
// user's, written by no one else, below folders where no one else can rename it away, up to /
// (a sticky /tmp is such a folder), and a script already there must be this user's and hold
// exactly the relay. A missing folder is made only below a folder that passes those checks.
func InstallScript(dir string) (string, error) {
	if err := private.MkdirAll(dir, 0o700); err != nil {
		return "", fmt.Errorf("relay script directory: %w", err)
	}
	if err := private.Owned(dir); err != nil {
		return "", fmt.Errorf("relay script directory: %w; remove it, or set gemstone_script_dir to a folder of gemgate's user's own", err)
	}
	if _, err := private.Path(dir); err != nil {
		return "", fmt.Errorf("relay script directory %s: %w; set gemstone_script_dir to a folder of gemgate's user's own", dir, err)
	}
	sum := sha256.Sum256(relayScript)
	path := filepath.Join(dir, "gemgate-relay-"+hex.EncodeToString(sum[:6])+".tpz")
	if err := private.Owned(path); err != nil {
		return "", fmt.Errorf("relay script: %w; remove it", err)
	}
	if b, err := os.ReadFile(path); err == nil {
		if bytes.Equal(b, relayScript) {
			return path, nil
		}
		return "", fmt.Errorf("relay script %s exists with other contents; remove it", path)
	} else if !errors.Is(err, os.ErrNotExist) {
		return "", err
	}
	if err := private.WriteFile(path, relayScript, 0o600); err != nil {
		return "", err
	}
	return path, nil
}

// DefaultScriptDir is where the relay script goes unless configured: the user's cache
// directory, or else a folder in the temporary directory, whose foreseeable name another
// account may have taken first (InstallScript then refuses it).
func DefaultScriptDir() string {
	if d, err := os.UserCacheDir(); err == nil && d != "" {
		return filepath.Join(d, "gemgate")
	}
	return filepath.Join(os.TempDir(), fmt.Sprintf("gemgate-%d", os.Getuid()))
}
