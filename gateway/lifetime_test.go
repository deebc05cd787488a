package gateway

import (
	"strings"
	"testing"
	"time"

	"github.com/gemgate/gemgate/gateway/sessions"
)

// TestNewValidatesLifetime: New refuses an unworkable lifetime, and reports it with every
// other problem of the options at once.
func TestNewValidatesLifetime(t *testing.T) {
	if _, err := New(Options{Lifetime: sessions.Lifetime{IdleTimeout: time.Minute}}); err == nil || !strings.Contains(err.Error(), "idle_timeout") {
		t.Errorf("New accepted an unworkable lifetime: %v", err)
	} else if !strings.Contains(err.Error(), "Policy is required") {
		t.Errorf("New does not report every problem at once: %v", err)
	}
}
