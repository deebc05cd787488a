package gateway

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/gemgate/gemgate/gateway/wire"
)

// BeginShutdown ends every GET stream, so that the HTTP server's Shutdown does not wait on
// it: one in the middle of a long message to a slow but steady reader (160 KiB/s) too, between
// the message's chunks, within wire.WriteTimeout.
func TestGetStreamEndsAtShutdownMidMessage(t *testing.T) {
	f, hc := newSlowLink(t)
	c := f.client("alice-rw")
	c.open()
	s := c.sessionObj()

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	req, err := c.newRequest(ctx, http.MethodGet, nil, "Accept", "text/event-stream")
	if err != nil {
		t.Fatal(err)
	}
	resp, err := hc.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET: %d", resp.StatusCode)
	}
	// A 2 MiB server-to-client notification for the stream.
	big := `{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"` + strings.Repeat("x", 2<<20) + `"}}`
	s.outbox.Push([]byte(big))

	got := make(chan int, 1)
	ended := make(chan time.Time, 1)
	go func() {
		buf := make([]byte, 64<<10)
		n := 0
		for {
			k, err := io.ReadFull(resp.Body, buf)
			n += k
			if n >= 128<<10 {
				select {
				case got <- n:
				default:
				}
			}
			if err != nil {
				ended <- time.Now()
				return
			}
			time.Sleep(400 * time.Millisecond) // 160 KiB/s
		}
	}()
	select {
	case <-got:
	case <-time.After(10 * time.Second):
		t.Fatal("the stream never started writing the message")
	}
	begun := time.Now()
	f.gw.BeginShutdown()
	select {
	case at := <-ended:
		if took := at.Sub(begun); took > wire.WriteTimeout+time.Second {
			t.Fatalf("the GET stream ended %v after BeginShutdown, more than wire.WriteTimeout (%v)", took.Round(100*time.Millisecond), wire.WriteTimeout)
		}
	case <-time.After(40 * time.Second):
		t.Fatal("the GET stream did not end within 40s of BeginShutdown")
	}
}
