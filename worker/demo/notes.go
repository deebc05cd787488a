package demo

import (
	"bufio"
	"bytes"
	"crypto/rand"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/gemgate/gemgate/internal/userdir"
)

// maxNoteBytes bounds one note's text.
const maxNoteBytes = 1 << 20

// errNoStore is returned by every notes operation when the worker has no
// data directory or no user.
var errNoStore = errors.New("notes store not configured: the worker has no data directory or no user")

// noteStore is one user's notes: regular files directly under dir. Every
// access goes through an os.Root on dir, so neither a crafted name nor a
// planted symlink can reach outside it.
type noteStore struct {
	dir string // empty when not configured
}

// newNoteStore is the store of o's user: o.UserDataDir when gemgate named it, else the user's
// folder of o.DataDir (the name gemgate gives it too).
func newNoteStore(o Options) noteStore {
	switch {
	case o.UserDataDir != "":
		return noteStore{dir: o.UserDataDir}
	case o.DataDir == "" || o.User == "":
		return noteStore{}
	}
	return noteStore{dir: filepath.Join(o.DataDir, userdir.Name(o.User))}
}

// noteInfo describes one note in a listing.
type noteInfo struct {
	Name     string `json:"name"`
	Size     int64  `json:"size"`
	Modified string `json:"modified"` // RFC 3339, UTC
}

// noteMatch is one line of a note matching a search.
type noteMatch struct {
	Name string `json:"name"`
	Line int    `json:"line"`
	Text string `json:"text"`
}

// validNoteName reports whether name may name a note: 1 to 64 characters
// from [A-Za-z0-9._-], not starting with a dot. This leaves no room for a
// path separator, "..", or the store's own temporary files.
func validNoteName(name string) bool {
	if len(name) == 0 || len(name) > 64 || name[0] == '.' {
		return false
	}
	for _, c := range []byte(name) {
		if !isNameByte(c) {
			return false
		}
	}
	return true
}

func isNameByte(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' ||
		c == '.' || c == '_' || c == '-'
}

func checkNoteName(name string) error {
	if !validNoteName(name) {
		return fmt.Errorf("invalid note name %q: use 1 to 64 characters from A-Z a-z 0-9 . _ - and do not start with a dot", name)
	}
	return nil
}

// open returns a root on the user's directory, creating it (0700) when
// create is set. It returns fs.ErrNotExist when the directory is missing.
func (s noteStore) open(create bool) (*os.Root, error) {
	if s.dir == "" {
		return nil, errNoStore
	}
	if create {
		if err := os.MkdirAll(s.dir, 0o700); err != nil {
			return nil, fmt.Errorf("creating notes directory: %w", err)
		}
	}
	return os.OpenRoot(s.dir)
}

func (s noteStore) list() ([]noteInfo, error) {
	root, err := s.open(false)
	if errors.Is(err, fs.ErrNotExist) {
		return []noteInfo{}, nil
	}
	if err != nil {
		return nil, err
	}
	defer root.Close()
	entries, err := fs.ReadDir(root.FS(), ".")
	if err != nil {
		return nil, err
	}
	notes := []noteInfo{}
	for _, e := range entries {
		if !e.Type().IsRegular() || !validNoteName(e.Name()) {
			continue
		}
		fi, err := e.Info()
		if err != nil {
			continue // removed meanwhile
		}
		notes = append(notes, noteInfo{Name: e.Name(), Size: fi.Size(), Modified: fi.ModTime().UTC().Format(time.RFC3339)})
	}
	return notes, nil
}

func (s noteStore) read(name string) (string, error) {
	if err := checkNoteName(name); err != nil {
		return "", err
	}
	root, err := s.open(false)
	if err == nil {
		defer root.Close()
		var data []byte
		data, err = root.ReadFile(name)
		if err == nil {
			return string(data), nil
		}
	}
	if errors.Is(err, fs.ErrNotExist) {
		return "", fmt.Errorf("note %q not found", name)
	}
	return "", err
}

func (s noteStore) exists(name string) (bool, error) {
	if err := checkNoteName(name); err != nil {
		return false, err
	}
	root, err := s.open(false)
	if err == nil {
		defer root.Close()
		_, err = root.Lstat(name)
	}
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	return err == nil, err
}

// write replaces the note atomically: a temporary file (0600, its name
// starting with a dot so it is never listed) renamed over the note.
func (s noteStore) write(name, text string) error {
	if err := checkNoteName(name); err != nil {
		return err
	}
	if len(text) > maxNoteBytes {
		return fmt.Errorf("note text is %d bytes; the limit is %d", len(text), maxNoteBytes)
	}
	root, err := s.open(true)
	if err != nil {
		return err
	}
	defer root.Close()
	tmp := ".tmp-" + rand.Text()
	f, err := root.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	_, err = f.WriteString(text)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = root.Rename(tmp, name)
	}
	if err != nil {
		_ = root.Remove(tmp)
		return fmt.Errorf("writing note %q: %w", name, err)
	}
	return nil
}

func (s noteStore) remove(name string) error {
	if err := checkNoteName(name); err != nil {
		return err
	}
	root, err := s.open(false)
	if err == nil {
		defer root.Close()
		err = root.Remove(name)
	}
	if errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("note %q not found", name)
	}
	return err
}

// maxMatches and maxMatchText bound a search answer.
const (
	maxMatches   = 100
	maxMatchText = 200
)

// search returns the lines (case-insensitive substring) of the user's notes
// that contain query, in name order; a match on the name alone is reported
// as line 0.
func (s noteStore) search(query string) ([]noteMatch, error) {
	if strings.TrimSpace(query) == "" {
		return nil, errors.New("query must not be empty")
	}
	notes, err := s.list()
	if err != nil {
		return nil, err
	}
	slices.SortFunc(notes, func(a, b noteInfo) int { return strings.Compare(a.Name, b.Name) })
	q := strings.ToLower(query)
	matches := []noteMatch{}
	for _, n := range notes {
		text, err := s.read(n.Name)
		if err != nil {
			continue // removed meanwhile
		}
		found := false
		sc := bufio.NewScanner(strings.NewReader(text))
		sc.Buffer(nil, maxNoteBytes+1)
		for line := 1; sc.Scan(); line++ {
			if bytes.Contains(bytes.ToLower(sc.Bytes()), []byte(q)) {
				found = true
				matches = append(matches, noteMatch{Name: n.Name, Line: line, Text: clip(sc.Text(), maxMatchText)})
				if len(matches) == maxMatches {
					return matches, nil
				}
			}
		}
		if !found && strings.Contains(strings.ToLower(n.Name), q) {
			matches = append(matches, noteMatch{Name: n.Name})
			if len(matches) == maxMatches {
				return matches, nil
			}
		}
	}
	return matches, nil
}

// clip shortens s to at most n bytes without splitting a UTF-8 sequence.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}
