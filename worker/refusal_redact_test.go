//go:build linux

package worker

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/gemgate/gemgate/jsonrpc"
)

// A worker whose greeting refuses with a line quoting its credential: the refusal answers the
// pending initialize (which the gateway logs and sends to the client), and Refusal and a later
// write report it: none of them carries the credential.
func TestRefusalQuotingTheCredentialIsRedacted(t *testing.T) {
	const cred = "eyJhbGciOiJSUzI1NiJ9.exchanged-backend-credential.c2lnbmF0dXJlLXNlY3JldA"
	spec := Spec{Path: "/bin/sh", Args: []string{"-c", `read -r c; read -r request; echo "refused: login with $c"; exec cat >/dev/null`},
		StopGrace: 200 * time.Millisecond, Credential: []byte(cred), CredentialStdin: true,
		Greeting: func(line []byte) (bool, error) {
			if line == nil {
				return false, errors.New("no greeting")
			}
			return false, errors.New(string(line))
		}}
	p, err := Start(spec)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Stop()
	c, err := p.Send(context.Background(), &jsonrpc.Message{ID: []byte("1"), Method: "initialize", Params: []byte(`{}`)}, nil)
	if err != nil {
		t.Fatal(err)
	}
	var answer string
	select {
	case m := <-c.Result():
		answer = string(m.Encode())
	case <-time.After(10 * time.Second):
		t.Fatal("no answer")
	}
	if strings.Contains(answer, "c2lnbmF0dXJlLXNlY3JldA") {
		t.Errorf("the initialize answer (logged by the gateway, sent to the client) holds the credential: %s", answer)
	}
	if _, err := p.Send(context.Background(), &jsonrpc.Message{ID: []byte("2"), Method: "ping"}, nil); err != nil && strings.Contains(err.Error(), "c2lnbmF0dXJlLXNlY3JldA") {
		t.Errorf("a later write's error holds the credential: %v", err)
	}
}
