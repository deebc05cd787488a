package main

import (
	"strings"
	"testing"
)

// A secret is refused on the command line, where every account on the host reads it for as
// long as gemgate runs, with an error that says where to put it and does not quote it; the
// environment and the config file still take it.
func TestSecretFlagIsRefused(t *testing.T) {
	for _, args := range [][]string{
		{"--exchange-client-secret", "s3cret-value"},
		{"--exchange-client-secret=s3cret-value"},
		{"-exchange-client-secret", "s3cret-value"},
		{"-exchange-client-secret=s3cret-value"},
		{"---exchange-client-secret=s3cret-value"},                             // bad syntax, which the flag package would quote
		{"--exchange-audience", "--", "--exchange-client-secret=s3cret-value"}, // "--" as a value
	} {
		_, err := load("serve", append([]string{"--issuer", "https://idp.example"}, args...))
		if err == nil || !strings.Contains(err.Error(), "GEMGATE_EXCHANGE_CLIENT_SECRET") || strings.Contains(err.Error(), "s3cret-value") {
			t.Errorf("%v: got %v; want it refused, naming the environment variable and not quoting the secret", args, err)
		}
	}
	t.Setenv("GEMGATE_EXCHANGE_CLIENT_SECRET", "from-env")
	c, err := load("serve", []string{"--issuer", "https://idp.example"})
	if err != nil || c.ExchangeSecret != "from-env" {
		t.Errorf("the environment's secret: got %+v, %v", c, err)
	}
}

// Every setting marked secret is one of the config's, so the refusal above covers what it
// should: today the exchange client's secret.
func TestSecretSettingsAreKnown(t *testing.T) {
	c := defaults()
	var secret []string
	for _, f := range c.fields() {
		if f.secret {
			secret = append(secret, f.key)
		}
	}
	if strings.Join(secret, ",") != "exchange_client_secret" {
		t.Errorf("settings marked secret: %v", secret)
	}
}
