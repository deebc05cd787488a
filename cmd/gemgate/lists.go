package main

import (
	"fmt"
	"slices"
	"strings"

	"github.com/google/shlex"
)

// How list settings are written. A list given as one string (a flag, an environment
// variable, or a plain string in the YAML file) is split; a YAML list is taken entry by entry.
//
//   - worker_command is a command line: shell words, split by github.com/google/shlex, so
//     'two words', "double quotes" and backslash escapes keep an argument whole and a comma is
//     an ordinary character. Nothing is expanded ($VAR, ~, globs and braces stay as written).
//   - Every other list (scopes, audiences, tool names, origins, proxies) is separated by
//     commas and/or white space. None of their values can contain those characters, and an
//     entry of a YAML list that does is refused, so splitting never cuts a value in two.

// listSeparators separate the entries of a list setting other than worker_command.
const listSeparators = ", \t\n\r"

// splitList reads a list given as one string: entries separated by commas or white space.
func splitList(s string) []string {
	return strings.FieldsFunc(s, func(r rune) bool { return strings.ContainsRune(listSeparators, r) })
}

// hashStandIn stands for '#' while checking whether the shell reading of a command line
// dropped a comment. It is a private-use character no command line has reason to contain.
const hashStandIn = "\uE000"

// splitWords reads a command line as shell words. An unquoted word starting with # would be a
// comment to a shell and silently dropped, so it is refused instead: quote it.
func splitWords(s string) ([]string, error) {
	words, err := shlex.Split(s)
	if err != nil {
		return nil, fmt.Errorf("%q is not a complete command line: %w", s, err)
	}
	if strings.Contains(s, "#") && !strings.Contains(s, hashStandIn) {
		literal, err := shlex.Split(strings.ReplaceAll(s, "#", hashStandIn))
		for i := range literal {
			literal[i] = strings.ReplaceAll(literal[i], hashStandIn, "#")
		}
		if err == nil && !slices.Equal(literal, words) {
			return nil, fmt.Errorf("%q has a word starting with #, which a shell reads as a comment", s)
		}
	}
	return words, nil
}

// checkEntries refuses YAML list entries that the one-string spelling could not express: an
// empty entry, or one holding a separator. worker_command entries are arguments and may
// hold anything.
func (f field) checkEntries(entries []string) error {
	if f.words {
		return nil
	}
	for _, e := range entries {
		if e == "" {
			return fmt.Errorf("%s: an entry is empty", f.key)
		}
		if strings.ContainsAny(e, listSeparators) {
			return fmt.Errorf("%s: entry %q contains a comma or white space, which separate the entries of this list", f.key, e)
		}
	}
	return nil
}
