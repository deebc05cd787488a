package helm

import (
	"path/filepath"
	"testing"

	"sigs.k8s.io/yaml"
)

type ingressDoc struct {
	Spec struct {
		TLS []struct {
			Hosts []string
		}
		Rules []struct {
			Host string
		}
	}
}

// The Ingress must route the host of publicURL, the URL clients are given: docs/scale-out.md
// installs the chart with publicURL and ingress.enabled alone. Routed for another host (the
// values' example mcp.example.com), every request of the clients gets the ingress
// controller's 404, and the TLS section names a host nobody asks for.
func TestChartIngressRoutesThePublicURLsHost(t *testing.T) {
	docs := renderByKind(t, filepath.Join(chart, "ci", "minimal-values.yaml"),
		"publicURL=https://mcp.team.test/mcp", "ingress.enabled=true", "ingress.tlsSecretName=mcp-tls")
	var ing ingressDoc
	if err := yaml.Unmarshal(docs["Ingress"], &ing); err != nil {
		t.Fatal(err)
	}
	if len(ing.Spec.Rules) != 1 || ing.Spec.Rules[0].Host != "mcp.team.test" {
		t.Errorf("publicURL https://mcp.team.test/mcp: the Ingress routes %+v, want the host mcp.team.test", ing.Spec.Rules)
	}
	if len(ing.Spec.TLS) != 1 || len(ing.Spec.TLS[0].Hosts) != 1 || ing.Spec.TLS[0].Hosts[0] != "mcp.team.test" {
		t.Errorf("publicURL https://mcp.team.test/mcp: the Ingress' TLS section is for %+v, want mcp.team.test", ing.Spec.TLS)
	}
}
