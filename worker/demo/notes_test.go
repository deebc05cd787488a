package demo

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

func noteNames(t *testing.T, cs *mcp.ClientSession) []string {
	t.Helper()
	res := call(t, cs, "list_notes", map[string]any{})
	mustOK(t, res)
	var out noteListOutput
	raw, _ := json.Marshal(res.StructuredContent)
	if err := json.Unmarshal(raw, &out); err != nil {
		t.Fatal(err)
	}
	names := []string{}
	for _, n := range out.Notes {
		names = append(names, n.Name)
	}
	return names
}

func TestNotesRoundTrip(t *testing.T) {
	dir := t.TempDir()
	cs := connect(t, Options{DataDir: dir, User: "alice"}, nil, legacyVersion)

	if diff := cmp.Diff([]string{}, noteNames(t, cs)); diff != "" {
		t.Errorf("empty store (-want +got):\n%s", diff)
	}
	body := "line one\nSecond Line with Needle\n\nüñí needle again"
	mustOK(t, call(t, cs, "write_note", map[string]any{"name": "todo.txt", "text": body}))
	mustOK(t, call(t, cs, "write_note", map[string]any{"name": "needle-name", "text": "nothing here"}))
	if got := mustOK(t, call(t, cs, "read_note", map[string]any{"name": "todo.txt"})); got != body {
		t.Errorf("read_note = %q, want %q", got, body)
	}
	if diff := cmp.Diff([]string{"needle-name", "todo.txt"}, noteNames(t, cs)); diff != "" {
		t.Errorf("list (-want +got):\n%s", diff)
	}

	res := call(t, cs, "search_notes", map[string]any{"query": "NEEDLE"})
	mustOK(t, res)
	var found searchOutput
	raw, _ := json.Marshal(res.StructuredContent)
	if err := json.Unmarshal(raw, &found); err != nil {
		t.Fatal(err)
	}
	wantMatches := []noteMatch{
		{Name: "needle-name"},
		{Name: "todo.txt", Line: 2, Text: "Second Line with Needle"},
		{Name: "todo.txt", Line: 4, Text: "üñí needle again"},
	}
	if diff := cmp.Diff(wantMatches, found.Matches); diff != "" {
		t.Errorf("search (-want +got):\n%s", diff)
	}
	mustFail(t, call(t, cs, "search_notes", map[string]any{"query": " "}), "query must not be empty")

	// Overwrite, then delete (this client has no elicitation: no question).
	mustOK(t, call(t, cs, "write_note", map[string]any{"name": "todo.txt", "text": "v2"}))
	if got := mustOK(t, call(t, cs, "read_note", map[string]any{"name": "todo.txt"})); got != "v2" {
		t.Errorf("after overwrite read_note = %q", got)
	}
	mustOK(t, call(t, cs, "delete_note", map[string]any{"name": "todo.txt"}))
	mustFail(t, call(t, cs, "read_note", map[string]any{"name": "todo.txt"}), `note "todo.txt" not found`)
	mustFail(t, call(t, cs, "delete_note", map[string]any{"name": "todo.txt"}), `note "todo.txt" not found`)

	// Size limit: exactly 1 MiB is fine, one byte more is not.
	mustOK(t, call(t, cs, "write_note", map[string]any{"name": "big", "text": strings.Repeat("x", 1<<20)}))
	mustFail(t, call(t, cs, "write_note", map[string]any{"name": "big", "text": strings.Repeat("x", 1<<20+1)}), "limit")

	// Permissions: directories 0700, files 0600; no temporary files left.
	userDir := filepath.Join(dir, "alice")
	assertMode(t, userDir, 0o700)
	assertMode(t, filepath.Join(userDir, "needle-name"), 0o600)
	entries, _ := os.ReadDir(userDir)
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), ".") {
			t.Errorf("leftover file %s", e.Name())
		}
	}
}

func assertMode(t *testing.T, path string, want os.FileMode) {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if got := fi.Mode().Perm(); got != want {
		t.Errorf("%s mode = %o, want %o", path, got, want)
	}
}

func TestNotesIsolation(t *testing.T) {
	dir := t.TempDir()
	alice := connect(t, Options{DataDir: dir, User: "alice"}, nil, legacyVersion)
	bob := connect(t, Options{DataDir: dir, User: "bob"}, nil, legacyVersion)
	// Users whose names differ only in characters that need escaping.
	evil1 := connect(t, Options{DataDir: dir, User: "../alice"}, nil, legacyVersion)
	evil2 := connect(t, Options{DataDir: dir, User: "_2e_2e_2falice"}, nil, legacyVersion)

	mustOK(t, call(t, alice, "write_note", map[string]any{"name": "secret", "text": "alice's"}))
	mustOK(t, call(t, bob, "write_note", map[string]any{"name": "secret", "text": "bob's"}))
	mustOK(t, call(t, evil1, "write_note", map[string]any{"name": "secret", "text": "evil1's"}))
	mustOK(t, call(t, evil2, "write_note", map[string]any{"name": "secret", "text": "evil2's"}))

	for name, cs := range map[string]*mcp.ClientSession{"alice's": alice, "bob's": bob, "evil1's": evil1, "evil2's": evil2} {
		if got := mustOK(t, call(t, cs, "read_note", map[string]any{"name": "secret"})); got != name {
			t.Errorf("read_note = %q, want %q", got, name)
		}
		if diff := cmp.Diff([]string{"secret"}, noteNames(t, cs)); diff != "" {
			t.Errorf("%s list (-want +got):\n%s", name, diff)
		}
	}
	mustOK(t, call(t, bob, "delete_note", map[string]any{"name": "secret"}))
	if got := mustOK(t, call(t, alice, "read_note", map[string]any{"name": "secret"})); got != "alice's" {
		t.Errorf("bob's delete reached alice: %q", got)
	}
	// Nothing was written outside the data directory.
	if _, err := os.Stat(filepath.Join(filepath.Dir(dir), "alice")); !os.IsNotExist(err) {
		t.Errorf("a user directory escaped the data directory: %v", err)
	}
}

func TestNoteNamesRefused(t *testing.T) {
	dir := t.TempDir()
	data := filepath.Join(dir, "data")
	cs := connect(t, Options{DataDir: data, User: "alice"}, nil, legacyVersion)
	mustOK(t, call(t, cs, "write_note", map[string]any{"name": "ok", "text": "x"}))
	bad := []string{
		"", ".", "..", "../escape", "../../escape", "a/b", `a\b`, ".hidden", ".tmp-x",
		"/etc/passwd", "x\x00y", "sp ace", "ü", strings.Repeat("a", 65),
	}
	for _, name := range bad {
		for _, tool := range []string{"read_note", "write_note", "delete_note"} {
			args := map[string]any{"name": name}
			if tool == "write_note" {
				args["text"] = "pwned"
			}
			mustFail(t, call(t, cs, tool, args), "invalid note name")
		}
	}
	// The longest valid name is not refused, only missing.
	mustFail(t, call(t, cs, "read_note", map[string]any{"name": strings.Repeat("a", 64)}), "not found")
	// Only the one good note exists anywhere under dir.
	var files []string
	filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			rel, _ := filepath.Rel(dir, path)
			files = append(files, rel)
		}
		return nil
	})
	if diff := cmp.Diff([]string{filepath.Join("data", "alice", "ok")}, files); diff != "" {
		t.Errorf("files (-want +got):\n%s", diff)
	}
}

func TestValidNoteName(t *testing.T) {
	for name, want := range map[string]bool{
		"a": true, "A.b_c-9": true, strings.Repeat("z", 64): true, "x..y": true,
		"": false, ".a": false, "..": false, "a/b": false, strings.Repeat("z", 65): false, "a b": false,
	} {
		if got := validNoteName(name); got != want {
			t.Errorf("validNoteName(%q) = %v, want %v", name, got, want)
		}
	}
}

func TestNotesSymlinkEscapeRefused(t *testing.T) {
	dir := t.TempDir()
	outside := filepath.Join(t.TempDir(), "target")
	if err := os.WriteFile(outside, []byte("outside"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(dir, "alice"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(dir, "alice", "link")); err != nil {
		t.Skip("symlinks unsupported:", err)
	}
	cs := connect(t, Options{DataDir: dir, User: "alice"}, nil, legacyVersion)
	res := call(t, cs, "read_note", map[string]any{"name": "link"})
	if !res.IsError || strings.Contains(text(res), "outside") {
		t.Errorf("read_note through a symlink out of the store = %q (error %v)", text(res), res.IsError)
	}
}

func TestReadOnlyRefusals(t *testing.T) {
	dir := t.TempDir()
	rw := connect(t, Options{DataDir: dir, User: "alice"}, nil, legacyVersion)
	mustOK(t, call(t, rw, "write_note", map[string]any{"name": "keep", "text": "kept"}))

	ro := connect(t, Options{DataDir: dir, User: "alice", ReadOnly: true}, nil, legacyVersion)
	tests := []struct {
		tool string
		args map[string]any
	}{
		{"write_note", map[string]any{"name": "new", "text": "x"}},
		{"write_note", map[string]any{"name": "keep", "text": "changed"}},
		{"delete_note", map[string]any{"name": "keep"}},
		{"toggle_extra_tool", map[string]any{}},
	}
	for _, tc := range tests {
		mustFail(t, call(t, ro, tc.tool, tc.args), "read-only session: "+tc.tool+" is not allowed")
	}
	if got := mustOK(t, call(t, ro, "read_note", map[string]any{"name": "keep"})); got != "kept" {
		t.Errorf("read-only read_note = %q, want kept", got)
	}
	if diff := cmp.Diff([]string{"keep"}, noteNames(t, ro)); diff != "" {
		t.Errorf("list (-want +got):\n%s", diff)
	}
	mustOK(t, call(t, ro, "search_notes", map[string]any{"query": "kept"}))
}

func TestDeleteNoteElicitation(t *testing.T) {
	tests := []struct {
		action      string
		wantDeleted bool
	}{
		{"accept", true},
		{"decline", false},
		{"cancel", false},
	}
	for _, version := range []string{legacyVersion, ""} {
		for _, tc := range tests {
			t.Run(tc.action+"/version="+version, func(t *testing.T) {
				dir := t.TempDir()
				asked := make(chan string, 1)
				copts := &mcp.ClientOptions{
					ElicitationHandler: func(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
						asked <- req.Params.Message
						return &mcp.ElicitResult{Action: tc.action}, nil
					},
				}
				cs := connect(t, Options{DataDir: dir, User: "alice"}, copts, version)
				mustOK(t, call(t, cs, "write_note", map[string]any{"name": "doomed", "text": "x"}))
				got := mustOK(t, call(t, cs, "delete_note", map[string]any{"name": "doomed"}))
				select {
				case msg := <-asked:
					if !strings.Contains(msg, `"doomed"`) {
						t.Errorf("confirmation %q does not name the note", msg)
					}
				default:
					t.Fatal("delete_note did not ask for confirmation")
				}
				_, err := os.Stat(filepath.Join(dir, "alice", "doomed"))
				if deleted := os.IsNotExist(err); deleted != tc.wantDeleted {
					t.Errorf("deleted = %v, want %v (result %q)", deleted, tc.wantDeleted, got)
				}
				if !tc.wantDeleted && !strings.Contains(got, "not deleted") {
					t.Errorf("result %q does not say the note was kept", got)
				}
			})
		}
	}
}
