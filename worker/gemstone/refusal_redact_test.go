//go:build linux

package gemstone

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gemgate/gemgate/jsonrpc"
	"github.com/gemgate/gemgate/worker"
)

type logBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *logBuf) Write(p []byte) (int, error) { l.mu.Lock(); defer l.mu.Unlock(); return l.b.Write(p) }
func (l *logBuf) String() string              { l.mu.Lock(); defer l.mu.Unlock(); return l.b.String() }

// The relay's refusal quotes what GemStone said about the login, and the greeting clips it to
// 400 bytes. When it quotes the token across that cut, the token is still taken out whole,
// before the cut: neither the log nor the refusal that pending calls and later writes get
// (the client's answer) holds any part of it.
func TestRefusalQuotingTheTokenIsRedactedBeforeItIsCut(t *testing.T) {
	const cred = "opaque-backend-credential-0123456789abcdefghijklmnopqrstuvwxyz-SECRETPART-0123456789"
	pad := strings.Repeat("x", 400-len("invalid JWT ")-40) // the clip falls 40 bytes into the token
	script := `read -r c; echo '{"gemgate":"error","kind":"login","message":"` + pad + ` invalid JWT '"$c"'"}'; exec sleep 30`
	var logs logBuf
	spec := worker.Spec{Path: "/bin/sh", Args: []string{"-c", script}, StopGrace: 200 * time.Millisecond,
		Logger: slog.New(slog.NewJSONHandler(&logs, nil)), Credential: []byte(cred), CredentialStdin: true}
	Apply(&spec)
	p, err := worker.Start(spec)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Stop()
	select {
	case <-p.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("the worker was not refused")
	}
	if strings.Contains(logs.String(), cred[:30]) {
		t.Errorf("gemgate's log holds the first part of the credential:\n%s", logs.String())
	}
	_, err = p.Send(context.Background(), &jsonrpc.Message{ID: json.RawMessage(`1`), Method: "ping"}, nil)
	if err == nil || !strings.Contains(err.Error(), "GemStone refused the login") {
		t.Fatalf("Send after the refusal: %v, want an error naming it", err)
	}
	if strings.Contains(err.Error(), cred[:30]) {
		t.Errorf("the refusal pending calls and writes are failed with quotes the credential: %v", err)
	}
}
