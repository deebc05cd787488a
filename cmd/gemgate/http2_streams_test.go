package main

import (
	"crypto/tls"
	"encoding/binary"
	"io"
	"net/url"
	"testing"
	"time"
)

// Over HTTP/2 (gemgate's own TLS) one connection may carry many requests at once, each with up
// to 64 KiB of headers, while max_connections is sized per connection. gemgate's server says
// in its first SETTINGS frame that a connection carries at most 8 streams (net/http's own
// default is 250), and at most 64 KiB of headers for each.
func TestHTTP2ConnectionCarriesAtMostEightRequests(t *testing.T) {
	t.Chdir(t.TempDir()) // dev --tls keeps its certificates in certs/ of the working directory
	info := runDev(t, "--tls", "--listen", "127.0.0.1:0", "--data-dir", t.TempDir(), "--metrics-listen", "off")
	u, err := url.Parse(info.URL)
	if err != nil {
		t.Fatal(err)
	}
	c, err := tls.Dial("tcp", u.Host, &tls.Config{InsecureSkipVerify: true, NextProtos: []string{"h2"}})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if p := c.ConnectionState().NegotiatedProtocol; p != "h2" {
		t.Fatalf("negotiated %q, want h2", p)
	}
	c.SetDeadline(time.Now().Add(10 * time.Second))
	// The client's preface and an empty SETTINGS frame (RFC 9113 §3.4, §6.5).
	if _, err := io.WriteString(c, "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n\x00\x00\x00\x04\x00\x00\x00\x00\x00"); err != nil {
		t.Fatal(err)
	}
	settings := map[uint16]uint32{}
	for {
		var head [9]byte
		if _, err := io.ReadFull(c, head[:]); err != nil {
			t.Fatal(err)
		}
		payload := make([]byte, int(head[0])<<16|int(head[1])<<8|int(head[2]))
		if _, err := io.ReadFull(c, payload); err != nil {
			t.Fatal(err)
		}
		if head[3] != 0x4 || head[4]&0x1 != 0 { // not a SETTINGS frame, or its ACK
			continue
		}
		for p := payload; len(p) >= 6; p = p[6:] {
			settings[binary.BigEndian.Uint16(p)] = binary.BigEndian.Uint32(p[2:])
		}
		break
	}
	const maxConcurrentStreams, maxHeaderListSize = 0x3, 0x6
	if got, ok := settings[maxConcurrentStreams]; !ok || got != 8 {
		t.Errorf("SETTINGS_MAX_CONCURRENT_STREAMS %d (sent: %v), want 8", got, ok)
	}
	if got, ok := settings[maxHeaderListSize]; !ok || got > 64<<10+64<<10/8 {
		t.Errorf("SETTINGS_MAX_HEADER_LIST_SIZE %d (sent: %v), want about 64 KiB", got, ok)
	}
}
