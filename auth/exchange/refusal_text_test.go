package exchange

import (
	"context"
	"encoding/base64"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"
)

// A token endpoint that refuses the client (a misconfigured or broken issuer, or a proxy in
// front of it) may quote what it was sent: the client secret, or the Basic header carrying
// it. The refusal's text is logged, so it is cleared of the secret in each form.
func TestRefusalQuotingTheClientSecretIsRedacted(t *testing.T) {
	const id, secret = "gemgate", "Sup3r-S3cret/Exchange+Value"
	forms := map[string]string{
		"plain":      secret,
		"form":       url.QueryEscape(secret),
		"basic":      base64.StdEncoding.EncodeToString([]byte(url.QueryEscape(id) + ":" + url.QueryEscape(secret))),
		"subject":    subject,
		"subjectURL": url.QueryEscape(subject),
	}
	for name, quoted := range forms {
		t.Run(name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(http.StatusUnauthorized)
				w.Write([]byte(`{"error":"invalid_client","error_description":"you sent ` + quoted + `"}`))
			}))
			defer srv.Close()
			ex, err := New(Config{TokenURL: srv.URL + "/token", ClientID: id, ClientSecret: secret, Audience: "gemstone"})
			if err != nil {
				t.Fatal(err)
			}
			_, err = ex.Exchange(t.Context(), subject)
			var re *Error
			if !errors.As(err, &re) || re.StatusCode != http.StatusUnauthorized || re.Code != "invalid_client" {
				t.Fatalf("want the refusal (401 invalid_client), got %v", err)
			}
			if strings.Contains(err.Error(), quoted) || !strings.Contains(err.Error(), "you sent [redacted]") {
				t.Errorf("the refusal's text was not cleared of %s: %q", name, err.Error())
			}
		})
	}
}

// What an issuer writes into an error (a description, a code, a token type) is clipped: a
// hostile or broken one cannot make one log line per worker start of any size it likes.
func TestIssuerTextInErrorsIsClipped(t *testing.T) {
	huge := strings.Repeat("A", 900<<10)
	for name, body := range map[string]string{
		"issued_token_type": `{"access_token":"backend","token_type":"Bearer","issued_token_type":"` + huge + `"}`,
		"token_type":        `{"access_token":"backend","token_type":"` + huge + `"}`,
		"error_description": `{"error":"invalid_grant","error_description":"` + huge + `"}`,
		"error":             `{"error":"` + huge + `"}`,
	} {
		t.Run(name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "application/json")
				if strings.Contains(body, `"error"`) {
					w.WriteHeader(http.StatusBadRequest)
				}
				w.Write([]byte(body))
			}))
			defer srv.Close()
			ex, err := New(Config{TokenURL: srv.URL + "/token", ClientID: "g", ClientSecret: "s", Audience: "gemstone"})
			if err != nil {
				t.Fatal(err)
			}
			_, err = ex.Exchange(t.Context(), subject)
			if err == nil {
				t.Fatal("accepted")
			}
			if n := len(err.Error()); n > 2*maxErrorText+200 {
				t.Errorf("the error is %d bytes long: the issuer's text is not clipped", n)
			}
			if !strings.Contains(err.Error(), "more)") {
				t.Errorf("the error does not say what was cut: %.300q", err.Error())
			}
		})
	}
}

// A redirect of the exchange is never followed, whatever host it names: the request carries
// the client secret and the user's token. The exchange fails saying so.
func TestExchangeDoesNotFollowARedirect(t *testing.T) {
	for _, code := range []int{http.StatusFound, http.StatusTemporaryRedirect, http.StatusPermanentRedirect} {
		var elsewhere int
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path == "/token" {
				http.Redirect(w, r, "/elsewhere", code)
				return
			}
			elsewhere++
			w.Header().Set("Content-Type", "application/json")
			w.Write([]byte(`{"access_token":"backend","token_type":"Bearer"}`))
		}))
		ex, err := New(Config{TokenURL: srv.URL + "/token", ClientID: "g", ClientSecret: "s", Audience: "gemstone"})
		if err != nil {
			t.Fatal(err)
		}
		cred, err := ex.Exchange(t.Context(), subject)
		srv.Close()
		if err == nil || cred.Token != "" || elsewhere != 0 {
			t.Errorf("HTTP %d: the redirect was followed (%d requests there, token %q, err %v)", code, elsewhere, cred.Token, err)
		} else if !strings.Contains(err.Error(), "redirected to") || strings.Contains(err.Error(), subject) {
			t.Errorf("HTTP %d: the error does not say why, or carries the token: %v", code, err)
		}
	}
}

// A token endpoint that takes the request and never answers: the exchange ends at its
// timeout with an error that is not a context error (its caller's context is live, and a
// caller may read a context error as its client gone), and a caller's own end still ends it
// at once.
func TestStalledExchangeEndsAtItsTimeout(t *testing.T) {
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	defer srv.Close()
	defer close(release)
	ex, err := New(Config{TokenURL: srv.URL + "/token", ClientID: "g", ClientSecret: "s", Audience: "gemstone", Timeout: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	_, err = ex.Exchange(context.Background(), subject)
	if err == nil || !strings.Contains(err.Error(), "no answer within 200ms") {
		t.Fatalf("want the timeout's error, got %v", err)
	}
	if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) {
		t.Errorf("the timeout reads as a context error: %v", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("the exchange took %s", d)
	}

	ctx, cancel := context.WithCancel(context.Background())
	go func() { time.Sleep(50 * time.Millisecond); cancel() }()
	ex, _ = New(Config{TokenURL: srv.URL + "/token", ClientID: "g", ClientSecret: "s", Audience: "gemstone"})
	if _, err := ex.Exchange(ctx, subject); !errors.Is(err, context.Canceled) {
		t.Errorf("a caller's cancel: want context.Canceled, got %v", err)
	}
}

func TestTimeoutDefaultsAndIsChecked(t *testing.T) {
	ex, err := New(Config{TokenURL: "https://idp.example/token", ClientID: "g", ClientSecret: "s", Audience: "a"})
	if err != nil || ex.cfg.Timeout != DefaultTimeout {
		t.Errorf("no timeout given: got %v, %v; want %s", ex.cfg.Timeout, err, DefaultTimeout)
	}
	if _, err := New(Config{TokenURL: "https://idp.example/token", ClientID: "g", ClientSecret: "s", Audience: "a", Timeout: -time.Second}); err == nil || !strings.Contains(err.Error(), "negative") {
		t.Errorf("a negative timeout: got %v", err)
	}
}
