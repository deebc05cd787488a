package main

// The diagnostic tools the 2026-07-28 conformance suite calls (those of go-sdk v1.8.0's
// everything-server, which v1.6.1's lacks), written as a server that speaks 2025-11-25 only
// does what they ask: it needs the client's input by asking it within the call
// (elicitation/create, sampling/createMessage, roots/list), logs with notifications/message
// once the client set a level, and changes its lists with list_changed notifications. Through
// gemgate, the 2026-07-28 suite then measures the bridge: what a legacy worker does, mapped
// to the new revision (docs/eras.md).

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

func registerDiagnostics(server *mcp.Server) {
	mcp.AddTool(server, &mcp.Tool{
		Name:        "test_x_mcp_header",
		Description: "Tests SEP-2243 Mcp-Param-* server-side validation",
		InputSchema: json.RawMessage(`{"type":"object","properties":{` +
			`"region":{"type":"string","description":"mirrored into Mcp-Param-Region","x-mcp-header":"Region"},` +
			`"level":{"type":"integer","description":"non-mirrored argument"}}}`),
	}, func(_ context.Context, _ *mcp.CallToolRequest, in struct {
		Region string `json:"region,omitempty"`
		Level  int    `json:"level,omitempty"`
	}) (*mcp.CallToolResult, any, error) {
		return text("region=" + in.Region), nil, nil
	})
	tool(server, "test_missing_capability", "Needs a sample from the client (sampling/createMessage)", func(ctx context.Context, ss *mcp.ServerSession) (string, error) {
		s, err := sample(ctx, ss, "Say hello")
		return "Client declared the sampling capability; tool executed: " + s, err
	})
	tool(server, "test_streaming_elicitation", "Asks the client within the call (elicitation/create)", func(ctx context.Context, ss *mcp.ServerSession) (string, error) {
		name, err := elicit(ctx, ss, "What is your name?", "name")
		return "stream observed, name " + name, err
	})
	tool(server, "test_logging_tool", "Logs at info, which the client gets only when it asked for a level", func(ctx context.Context, ss *mcp.ServerSession) (string, error) {
		err := ss.Log(ctx, &mcp.LoggingMessageParams{Level: "info", Data: "test_logging_tool executed"})
		return "Log attempted", err
	})
	tool(server, "test_trigger_tool_change", "Adds a tool: notifications/tools/list_changed", func(context.Context, *mcp.ServerSession) (string, error) {
		mcp.AddTool(server, &mcp.Tool{Name: "__transient_tool_for_list_changed", Description: "Transient tool used to trigger tools/list_changed"}, func(context.Context, *mcp.CallToolRequest, any) (*mcp.CallToolResult, any, error) {
			return &mcp.CallToolResult{}, nil, nil
		})
		return "tools_list_changed published", nil
	})
	tool(server, "test_trigger_prompt_change", "Adds a prompt: notifications/prompts/list_changed", func(context.Context, *mcp.ServerSession) (string, error) {
		server.AddPrompt(&mcp.Prompt{Name: "__transient_prompt_for_list_changed", Description: "Transient prompt used to trigger prompts/list_changed"}, func(context.Context, *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
			return &mcp.GetPromptResult{}, nil
		})
		return "prompts_list_changed published", nil
	})
	registerInputTools(server)
	server.AddPrompt(&mcp.Prompt{Name: "test_input_required_result_prompt", Description: "Asks the client for context (elicitation/create)"},
		func(ctx context.Context, req *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
			c, err := elicit(ctx, req.Session, "Please provide context for the prompt", "context")
			if err != nil {
				return nil, err
			}
			return &mcp.GetPromptResult{Description: "A prompt with elicited context",
				Messages: []*mcp.PromptMessage{{Role: "user", Content: &mcp.TextContent{Text: "Context: " + c}}}}, nil
		})
}

// registerInputTools are SEP-2322's input-required tools, the legacy way: the tool asks the
// client within the call, and answers once it has what it asked.
func registerInputTools(server *mcp.Server) {
	tool(server, "test_input_required_result_elicitation", "Asks for the caller's name", func(ctx context.Context, ss *mcp.ServerSession) (string, error) {
		name, err := elicit(ctx, ss, "What is your name?", "name")
		return "Hello, " + name + "!", err
	})
	tool(server, "test_input_required_result_sampling", "Asks for a completion", func(ctx context.Context, ss *mcp.ServerSession) (string, error) {
		s, err := sample(ctx, ss, "What is the capital of France?")
		return "Sampling response: " + s, err
	})
	tool(server, "test_input_required_result_list_roots", "Asks for the client's roots", func(ctx context.Context, ss *mcp.ServerSession) (string, error) {
		roots, err := listRoots(ctx, ss)
		return fmt.Sprintf("Client exposed %d root(s): %s", len(roots), strings.Join(roots, ", ")), err
	})
	for _, name := range []string{"test_input_required_result_request_state", "test_input_required_result_tampered_state"} {
		tool(server, name, "Asks for a confirmation", func(ctx context.Context, ss *mcp.ServerSession) (string, error) {
			_, err := elicit(ctx, ss, "Please confirm", "ok")
			return "state-ok: confirmation accepted", err
		})
	}
	tool(server, "test_input_required_result_multiple_inputs", "Asks for a name, a completion and the roots at once", func(ctx context.Context, ss *mcp.ServerSession) (string, error) {
		var name, greeting string
		var roots []string
		err := all(
			func() (err error) { name, err = elicit(ctx, ss, "What is your name?", "name"); return },
			func() (err error) { greeting, err = sample(ctx, ss, "Generate a greeting"); return },
			func() (err error) { roots, err = listRoots(ctx, ss); return },
		)
		return fmt.Sprintf("%s %s — %d root(s) visible", greeting, name, len(roots)), err
	})
	tool(server, "test_input_required_result_multi_round", "Asks for a name, then for a colour", func(ctx context.Context, ss *mcp.ServerSession) (string, error) {
		name, err := elicit(ctx, ss, "Step 1: What is your name?", "name")
		if err != nil {
			return "", err
		}
		color, err := elicit(ctx, ss, "Step 2: What is your favorite color?", "color")
		return fmt.Sprintf("Multi-round complete: %s likes %s", name, color), err
	})
	tool(server, "test_input_required_result_capabilities", "Asks for what the client declared it can give", func(ctx context.Context, ss *mcp.ServerSession) (string, error) {
		// A legacy server knows the capabilities its client declared at initialize.
		caps := ss.InitializeParams().Capabilities
		var asks []func() error
		if caps.Elicitation != nil {
			asks = append(asks, func() error { _, err := elicit(ctx, ss, "What is your name?", "name"); return err })
		}
		if caps.Sampling != nil {
			asks = append(asks, func() error { _, err := sample(ctx, ss, "Generate a short greeting"); return err })
		}
		if err := any1(asks...); err != nil {
			return "", err
		}
		return "Capability-aware input requests fulfilled", nil
	})
}

// tool adds a tool without arguments whose handler gives a text or an error.
func tool(server *mcp.Server, name, about string, h func(context.Context, *mcp.ServerSession) (string, error)) {
	mcp.AddTool(server, &mcp.Tool{Name: name, Description: about}, func(ctx context.Context, req *mcp.CallToolRequest, _ any) (*mcp.CallToolResult, any, error) {
		s, err := h(ctx, req.Session)
		if err != nil {
			return nil, nil, err
		}
		return text(s), nil, nil
	})
}

func text(s string) *mcp.CallToolResult {
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: s}}}
}

// elicit asks the client for one string field and returns it.
func elicit(ctx context.Context, ss *mcp.ServerSession, message, field string) (string, error) {
	res, err := ss.Elicit(ctx, &mcp.ElicitParams{Message: message, RequestedSchema: &jsonschema.Schema{
		Type: "object", Properties: map[string]*jsonschema.Schema{field: {Type: "string"}}, Required: []string{field},
	}})
	if err != nil {
		return "", err
	}
	if res.Action != "accept" {
		return "", fmt.Errorf("the client did not accept: %s", res.Action)
	}
	return fmt.Sprint(res.Content[field]), nil
}

// sample asks the client for a completion and returns its text.
func sample(ctx context.Context, ss *mcp.ServerSession, prompt string) (string, error) {
	res, err := ss.CreateMessage(ctx, &mcp.CreateMessageParams{MaxTokens: 100,
		Messages: []*mcp.SamplingMessage{{Role: "user", Content: &mcp.TextContent{Text: prompt}}}})
	if err != nil {
		return "", err
	}
	if t, ok := res.Content.(*mcp.TextContent); ok {
		return t.Text, nil
	}
	return "(non-text response)", nil
}

// listRoots asks the client for its roots and returns their URIs.
func listRoots(ctx context.Context, ss *mcp.ServerSession) ([]string, error) {
	res, err := ss.ListRoots(ctx, &mcp.ListRootsParams{})
	if err != nil {
		return nil, err
	}
	var uris []string
	for _, r := range res.Roots {
		uris = append(uris, r.URI)
	}
	return uris, nil
}

// all runs fs at once (a legacy server's questions sent together) and returns their first error.
func all(fs ...func() error) error {
	for _, err := range concurrently(fs) {
		if err != nil {
			return err
		}
	}
	return nil
}

// any1 runs fs at once and succeeds when one of them did (a question the client cannot
// answer is refused, and the tool goes on with what it got).
func any1(fs ...func() error) error {
	errs := concurrently(fs)
	for _, err := range errs {
		if err == nil {
			return nil
		}
	}
	if len(errs) == 0 {
		return nil
	}
	return errs[0]
}

func concurrently(fs []func() error) []error {
	errs := make([]error, len(fs))
	var wg sync.WaitGroup
	for i, f := range fs {
		wg.Add(1)
		go func() { defer wg.Done(); errs[i] = f() }()
	}
	wg.Wait()
	return errs
}
