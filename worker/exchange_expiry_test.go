package worker

import (
	"context"
	"testing"
	"time"
)

// fixedExchanger answers every exchange with one token and expiry.
type fixedExchanger struct{ expiry time.Time }

func (f fixedExchanger) Exchange(context.Context, string) (string, time.Time, error) {
	return "backend-token", f.expiry, nil
}

// An issuer that says nothing of the exchanged token's life (no expires_in) does not make
// it last for ever: it is taken to last as long as the token it was exchanged for, so that
// on_token_expiry still ends or renews the worker; an expiry the issuer gave stands.
func TestExchangedCredentialWithoutExpiryLastsAsItsSubject(t *testing.T) {
	subjectExpiry := time.Now().Add(5 * time.Minute).Truncate(time.Second)
	id := Identity{Subject: "s", User: "alice", Expiry: subjectExpiry, Token: "subject-token"}

	cred, err := ExchangeCredential{Exchanger: fixedExchanger{}}.Credential(context.Background(), id)
	if err != nil || !cred.Expiry.Equal(subjectExpiry) {
		t.Errorf("no expiry from the issuer: got %v, %v; want the subject token's %v", cred.Expiry, err, subjectExpiry)
	}
	given := time.Now().Add(time.Minute).Truncate(time.Second)
	cred, err = ExchangeCredential{Exchanger: fixedExchanger{expiry: given}}.Credential(context.Background(), id)
	if err != nil || !cred.Expiry.Equal(given) {
		t.Errorf("the issuer's expiry: got %v, %v; want %v", cred.Expiry, err, given)
	}
}
