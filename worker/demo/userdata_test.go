package demo

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/gemgate/gemgate/internal/userdir"
)

// With GEMGATE_USER_DATA_DIR, the notes live in the folder gemgate named, not in the user's
// folder of GEMGATE_DATA_DIR; without it, in the folder of data_dir that gemgate would name.
func TestNotesUseTheUserDataDirGemgateNames(t *testing.T) {
	data, own := t.TempDir(), t.TempDir()
	t.Setenv(EnvUser, "alice@example.com")
	t.Setenv(EnvDataDir, data)
	t.Setenv(EnvUserDataDir, own)
	t.Setenv(EnvReadOnly, "0")
	o := OptionsFromEnv()
	if o.UserDataDir != own {
		t.Fatalf("OptionsFromEnv read %s as %q, want %q", EnvUserDataDir, o.UserDataDir, own)
	}
	o.Logger = nil
	mustOK(t, call(t, connect(t, o, nil, legacyVersion), "write_note", map[string]any{"name": "n", "text": "in own"}))
	if b, err := os.ReadFile(filepath.Join(own, "n")); err != nil || string(b) != "in own" {
		t.Errorf("the note is not in %s: %q, %v", EnvUserDataDir, b, err)
	}
	if entries, _ := os.ReadDir(data); len(entries) != 0 {
		t.Errorf("data_dir holds %d entries, want none: the store ignored %s", len(entries), EnvUserDataDir)
	}

	o.UserDataDir = ""
	mustOK(t, call(t, connect(t, o, nil, legacyVersion), "write_note", map[string]any{"name": "n", "text": "in data"}))
	if b, err := os.ReadFile(filepath.Join(data, userdir.Name("alice@example.com"), "n")); err != nil || string(b) != "in data" {
		t.Errorf("without %s the note is not in data_dir's folder for the user: %q, %v", EnvUserDataDir, b, err)
	}
}
