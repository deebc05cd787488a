package main

import "testing"

// fa4d2f0 refuses, at each worker start, an exchanged JWT whose aud names one of gemgate's
// own audiences (GatewayAudiences = public_url + audiences). An exchange_audience that is
// itself one of them makes every exchange ask the issuer for a token gemgate must refuse:
// the configuration validates and serves, and every user's first request fails at worker
// start, with the cause only in a log line per attempt. validate() should say so at start.
func TestExchangeAudienceThatIsGemgatesOwnIsRefused(t *testing.T) {
	t.Setenv("GEMGATE_EXCHANGE_CLIENT_SECRET", "s3cret")
	load := func(aud string) *Config {
		return mustLoad(t, "--listen", "0.0.0.0:8080", "--public-url", "https://gw.example/mcp",
			"--issuer", "https://id.example/realms/team", "--worker", "command", "--worker-command", "my-server",
			"--read-only-tools", "list_*", "--worker-user", "nobody", "--audiences", "gemgate-api",
			"--worker-credential", "exchange", "--exchange-client-id", "gemgate", "--exchange-audience", aud)
	}
	if errs := load("backend").validate(); len(errs) != 0 {
		t.Fatalf("baseline configuration does not validate: %v", errs)
	}
	for _, aud := range []string{"https://gw.example/mcp", "gemgate-api"} {
		if errs := load(aud).validate(); len(errs) == 0 {
			t.Errorf("exchange_audience %q, one of gemgate's own audiences, validated: every exchange asks for a token gemgate accepts", aud)
		}
	}
}
