package main

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/gemgate/gemgate/auth"
	"github.com/gemgate/gemgate/auth/exchange"
	"golang.org/x/sync/singleflight"
)

// lazyExchanger trades tokens at the issuer's token endpoint, which it finds through the
// issuer's discovery document on first use rather than at start: gemgate starts while the
// identity provider is down, and the first worker that needs a credential finds the
// endpoint once it is up. A failed discovery is tried again at the next worker start.
type lazyExchanger struct {
	issuer   string
	cfg      exchange.Config // TokenURL empty: discover it
	insecure bool            // allow_insecure_http: a discovered endpoint may be plain HTTP anywhere

	ex   atomic.Pointer[exchange.Exchanger] // set once the endpoint is known
	find singleflight.Group                 // one discovery at a time, whoever asks
}

func newLazyExchanger(issuer string, cfg exchange.Config, allowInsecure bool) (*lazyExchanger, error) {
	// The secret and each caller's token follow a redirect only where they could be sent.
	cfg.HTTPClient = auth.GuardRedirects(cfg.HTTPClient, issuer, allowInsecure)
	l := &lazyExchanger{issuer: issuer, cfg: cfg, insecure: allowInsecure}
	if cfg.TokenURL != "" { // given: check it at start, as any other setting
		ex, err := exchange.New(cfg)
		if err != nil {
			return nil, err
		}
		l.ex.Store(ex)
	}
	return l, nil
}

// exchanger is the exchanger once the token endpoint is known. Callers share one bounded
// discovery, each waiting only as long as its own context lets it, so a hung issuer does not
// hold every worker start. A failed discovery is tried again by the next caller.
func (l *lazyExchanger) exchanger(ctx context.Context) (*exchange.Exchanger, error) {
	if ex := l.ex.Load(); ex != nil {
		return ex, nil
	}
	found := l.find.DoChan("", func() (any, error) {
		if ex := l.ex.Load(); ex != nil {
			return ex, nil
		}
		tokenURL, err := auth.TokenEndpoint(context.WithoutCancel(ctx), l.cfg.HTTPClient, l.issuer, l.insecure)
		if err != nil {
			return nil, fmt.Errorf("finding the issuer's token endpoint for token exchange: %w", err)
		}
		cfg := l.cfg
		cfg.TokenURL = tokenURL
		ex, err := exchange.New(cfg)
		if err != nil {
			return nil, err
		}
		l.ex.Store(ex)
		return ex, nil
	})
	select {
	case r := <-found:
		if r.Err != nil {
			return nil, r.Err
		}
		return r.Val.(*exchange.Exchanger), nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

func (l *lazyExchanger) Exchange(ctx context.Context, subject string) (string, time.Time, error) {
	ex, err := l.exchanger(ctx)
	if err != nil {
		return "", time.Time{}, err
	}
	cred, err := ex.Exchange(ctx, subject)
	return cred.Token, cred.Expiry, err
}
