package main

import (
	"strings"
	"testing"
)

// max_user_names bounds the user names gemgate binds to their subject; 0 would refuse every
// new user, so it is refused at start.
func TestMaxUserNamesMustBePositive(t *testing.T) {
	for _, tc := range []struct {
		value string
		ok    bool
	}{{"0", false}, {"-1", false}, {"1", true}, {"100000", true}} {
		c, err := load("serve", []string{"--issuer", "https://id.example", "--max-user-names", tc.value}, false)
		if err != nil {
			t.Fatal(err)
		}
		refused := strings.Contains(configErrors(c.validate()).Error(), "max_user_names")
		if refused == tc.ok {
			t.Errorf("max_user_names %s: refused %t, want %t", tc.value, refused, !tc.ok)
		}
	}
	c, _ := load("serve", nil, false)
	if c.MaxUserNames != 100000 {
		t.Errorf("default max_user_names %d, want 100000", c.MaxUserNames)
	}
}
