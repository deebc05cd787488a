package main

import "testing"

// aad1b81 refuses an exchange_audience equal to public_url (trailing slash trimmed) or an
// audiences entry. With no public_url (a loopback listener), gemgate's own audience is the
// URL derived from listen and mcp_path (resourceURL: "http://127.0.0.1:8080/mcp"), and
// validate() compares exchange_audience with "" instead: the derived audience validates, and
// every exchange asks for a token gemgate accepts, refused only at each worker start.
func TestExchangeAudienceEqualToDerivedPublicURLIsRefused(t *testing.T) {
	t.Setenv("GEMGATE_EXCHANGE_CLIENT_SECRET", "s3cret")
	load := func(aud string) *Config {
		return mustLoad(t, "--listen", "127.0.0.1:8080",
			"--issuer", "https://id.example/realms/team", "--worker", "command", "--worker-command", "my-server",
			"--read-only-tools", "list_*", "--worker-user", "nobody",
			"--worker-credential", "exchange", "--exchange-client-id", "gemgate", "--exchange-audience", aud)
	}
	if errs := load("backend").validate(); len(errs) != 0 {
		t.Fatalf("baseline configuration does not validate: %v", errs)
	}
	c := load("http://127.0.0.1:8080/mcp")
	if own := resourceURL(c, c.Listen); own != c.ExchangeAudience {
		t.Fatalf("derived audience %q, want %q (test premise)", own, c.ExchangeAudience)
	}
	if errs := c.validate(); len(errs) == 0 {
		t.Errorf("exchange_audience %q, gemgate's own derived audience on %s, validated", c.ExchangeAudience, c.Listen)
	}
}
