package gateway

import (
	"context"
	"net/url"
	"path"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/gemgate/gemgate/policy"
)

// TestResourceRuleReadsWhatAFileWorkerReads reads URIs through a go-sdk server that serves
// files as the SDK's own file handler does: a template file:///{+path}, whose match is the
// SDK's dispatch, and the path url.Parse reads (u.Path, without the query and fragment). A
// URI the worker reads under /hr/ must not reach it past the resource rules for a token
// without hr:read: refused before a rule reads it (URIRefusal) or by the rule. The URIs are
// policy's fileWorkerURIs, the seeds of its FuzzResourceRuleReadsWhatAFileWorkerReads, which
// models this worker without the SDK.
func TestResourceRuleReadsWhatAFileWorkerReads(t *testing.T) {
	s := mcp.NewServer(&mcp.Implementation{Name: "files", Version: "1"}, nil)
	s.AddResourceTemplate(&mcp.ResourceTemplate{Name: "files", URITemplate: "file:///{+path}"},
		func(_ context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
			u, err := url.Parse(req.Params.URI)
			if err != nil {
				return nil, err
			}
			return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: req.Params.URI, Text: path.Clean(u.Path)}}}, nil
		})
	ctx := context.Background()
	ct, st := mcp.NewInMemoryTransports()
	ss, err := s.Connect(ctx, st, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ss.Close()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "c", Version: "1"}, nil).Connect(ctx, ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	newPolicy := func(r policy.Rule) *policy.Policy {
		p, err := policy.New(policy.Config{ExtraScopes: []string{"hr:read"}, ResourceRules: []policy.Rule{r}})
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	policies := map[string]*policy.Policy{
		"uris glob":  newPolicy(policy.Rule{Name: "hr-files", URIs: []string{"file:///hr/*"}, Scope: "hr:read"}),
		"uris name":  newPolicy(policy.Rule{Name: "pay", URIs: []string{"file:///hr/pay.txt"}, Scope: "hr:read"}),
		"startsWith": newPolicy(policy.Rule{Name: "hr-files", Allow: `!uri.startsWith("file:///hr/") || "hr:read" in scopes`}),
	}
	underHR := 0
	for _, uri := range []string{
		"file:///hr/pay.txt", "file:///hr/pay.txt?", "file:///hr/pay.txt#", "file:///hr/pay.txt?/",
		"file:///hr/pay.txt#/", "file:///hr/pay.txt?x=/y", "file:///hr/pay.txt#/../../docs/a",
		"file:///hr/pay.txt?a#b/c", "file:///hr/x/..", "file:///hr/%2e", "file:///hr//pay.txt",
	} {
		res, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: uri})
		if err != nil || len(res.Contents) != 1 || !strings.HasPrefix(res.Contents[0].Text, "/hr/") {
			continue // the worker reads nothing under /hr/
		}
		underHR++
		for name, p := range policies {
			a := p.DecideToken(policy.Token{Scopes: []string{"mcp:use", "mcp:write"}})
			if why := p.URIRefusal(uri); why != "" {
				continue
			}
			if v, _ := p.ExplainKind(policy.KindResource, a, uri, nil); v == policy.Allowed {
				t.Errorf("%s: %q reaches the worker, which reads %s, without hr:read", name, uri, res.Contents[0].Text)
			}
		}
	}
	if underHR != 9 { // all but file:///hr/x/.. and file:///hr/%2e, which read /hr itself
		t.Fatalf("the worker read %d of the URIs under /hr/, not 9: the SDK's reading changed", underHR)
	}
}
