package main

import (
	"errors"
	"strings"
	"testing"
)

// input_required_timeout of 0 or below is refused, as every other duration that cannot be
// turned off is: the gateway's zero means its default, so "-30s" or "0" served with a wait of
// two minutes, the opposite of what was written, and gemgate check passed it.
func TestInputRequiredTimeoutNotPositiveIsRefused(t *testing.T) {
	for _, v := range []string{"-30s", "0", "0s"} {
		c := mustLoad(t, unsandboxed("--issuer", "https://issuer.example.com", "--input-required-timeout", v)...)
		err := errors.Join(c.validate()...)
		if err == nil || !strings.Contains(err.Error(), "input_required_timeout: must be positive") {
			t.Errorf("input_required_timeout %s: validate() = %v, want it refused", v, err)
		}
	}
	c := mustLoad(t, unsandboxed("--issuer", "https://issuer.example.com", "--input-required-timeout", "1s")...)
	if err := errors.Join(c.validate()...); err != nil {
		t.Errorf("input_required_timeout 1s: %v", err)
	}
}
