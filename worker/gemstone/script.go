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
)

// relayScript is the topaz command file every session runs.
//
//go:embed relay.tpz
var relayScript []byte

// Script is the relay's topaz command file.
func Script() []byte { return bytes.Clone(relayScript) }

// InstallScript writes the relay script into dir (created 0700 when missing) under a name
// that carries its hash, and answers its path. A file already there with other contents, or
// one that others may write, is refused: whoever can change the script runs Smalltalk as the
// service account.
func InstallScript(dir string) (string, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", fmt.Errorf("relay script directory: %w", err)
	}
	if fi, err := os.Stat(dir); err != nil {
		return "", err
	} else if fi.Mode().Perm()&0o022 != 0 {
		return "", fmt.Errorf("relay script directory %s is writable by others; make it 0700", dir)
	}
	sum := sha256.Sum256(relayScript)
	path := filepath.Join(dir, "gemgate-relay-"+hex.EncodeToString(sum[:6])+".tpz")
	if b, err := os.ReadFile(path); err == nil {
		fi, err := os.Stat(path)
		if err == nil && bytes.Equal(b, relayScript) && fi.Mode().Perm()&0o022 == 0 {
			return path, nil
		}
		return "", fmt.Errorf("relay script %s exists with other contents or permissions; remove it", path)
	} else if !errors.Is(err, os.ErrNotExist) {
		return "", err
	}
	tmp, err := os.CreateTemp(dir, ".relay-*")
	if err != nil {
		return "", err
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(relayScript); err != nil {
		tmp.Close()
		return "", err
	}
	if err := tmp.Chmod(0o600); err != nil {
		tmp.Close()
		return "", err
	}
	if err := tmp.Close(); err != nil {
		return "", err
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return "", err
	}
	return path, nil
}

// DefaultScriptDir is where the relay script goes unless configured: the user's cache
// directory, or a private directory under the temporary directory.
func DefaultScriptDir() string {
	if d, err := os.UserCacheDir(); err == nil && d != "" {
		return filepath.Join(d, "gemgate")
	}
	return filepath.Join(os.TempDir(), fmt.Sprintf("gemgate-%d", os.Getuid()))
}
