package sessions

import (
	"context"
	"net/http/httptest"
	"testing"
)

// TestStreamEndWithoutToken: with no token to outlive, a stream ends only with also; with
// neither, never.
func TestStreamEndWithoutToken(t *testing.T) {
	r := httptest.NewRequest("GET", "/mcp", nil)
	end, stop := StreamEnd(r, nil)
	if end != nil {
		t.Error("a stream with nothing to end it has an end")
	}
	stop()

	also, cancel := context.WithCancel(context.Background())
	end, stop = StreamEnd(r, also)
	defer stop()
	select {
	case <-end:
		t.Fatal("ended before also was done")
	default:
	}
	cancel()
	<-end
}
