package devissuer

import (
	"bytes"
	"log/slog"
	"net/url"
	"strings"
	"sync"
	"testing"
)

// lockedBuffer is written by the server's goroutines and read by the test.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

func TestLogsNoSecrets(t *testing.T) {
	var logs lockedBuffer
	i := startIssuer(t, Options{
		Clients:           append(DefaultClients(), gateway),
		ExchangeAudiences: []string{"gemstone"},
		Logger:            slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug})),
	})
	alice := client(t, i, "alice")
	bad := alice
	bad.Secret = "wrong-secret-value"

	cc := post(t, i, url.Values{"grant_type": {"client_credentials"}}, &alice)
	subject := cc.body["access_token"].(string)
	ex := post(t, i, exchangeForm(subject), &gateway)
	exchanged := ex.body["access_token"].(string)
	post(t, i, url.Values{"grant_type": {"client_credentials"}}, &bad)
	post(t, i, exchangeForm(subject+"x"), &gateway)

	out := logs.String()
	if !strings.Contains(out, "token issued") || !strings.Contains(out, "token refused") {
		t.Fatalf("expected issue and refusal lines, got:\n%s", out)
	}
	for name, secret := range map[string]string{
		"client secret": alice.Secret, "wrong secret": bad.Secret, "gateway secret": gateway.Secret,
		"subject token": subject, "exchanged token": exchanged,
	} {
		if strings.Contains(out, secret) {
			t.Errorf("log contains the %s", name)
		}
	}
}
