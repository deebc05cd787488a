//lint:file-ignore SA1019 logging and sampling are deprecated from 2026-07-28 but still part of 2025-11-25, which gemgate serves; the demo exercises them on purpose.

package demo

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

type whoamiOutput struct {
	User     string `json:"user"`
	Session  string `json:"session"`
	ReadOnly bool   `json:"read_only"`
}

func (d *demoServer) whoami(_ context.Context, _ *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, whoamiOutput, error) {
	out := whoamiOutput{User: d.opts.User, Session: d.opts.Session, ReadOnly: d.opts.ReadOnly}
	return textResult("user=%s session=%s read_only=%t", out.User, out.Session, out.ReadOnly), out, nil
}

type echoInput struct {
	Text string `json:"text" jsonschema:"the text to return"`
}

func (d *demoServer) echo(_ context.Context, _ *mcp.CallToolRequest, in echoInput) (*mcp.CallToolResult, any, error) {
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: in.Text}}}, nil, nil
}

// maxSlowSeconds bounds the slow tool.
const maxSlowSeconds = 600

type slowInput struct {
	Seconds  int  `json:"seconds" jsonschema:"how long to run, 0 to 600 seconds"`
	Progress bool `json:"progress,omitempty" jsonschema:"send a progress notification each second (needs a progressToken)"`
	Log      bool `json:"log,omitempty" jsonschema:"send a log message each second"`
}

// slow runs in.Seconds ticks. It writes "slow: started" to stderr when it begins and, when
// its context ends (the SDK ends it on notifications/cancelled), stops and writes "slow:
// cancelled", so a test can wait for the call to run and see the cancellation reach it.
func (d *demoServer) slow(ctx context.Context, req *mcp.CallToolRequest, in slowInput) (*mcp.CallToolResult, any, error) {
	if in.Seconds < 0 || in.Seconds > maxSlowSeconds {
		return nil, nil, fmt.Errorf("seconds must be between 0 and %d", maxSlowSeconds)
	}
	token := req.Params.GetProgressToken()
	fmt.Fprintln(d.opts.stderr(), "slow: started")
	tick := time.NewTicker(d.opts.slowTick())
	defer tick.Stop()
	for i := 1; i <= in.Seconds; i++ {
		select {
		case <-ctx.Done():
			fmt.Fprintln(d.opts.stderr(), "slow: cancelled")
			d.log.Info("slow cancelled", "after", i-1, "of", in.Seconds)
			return nil, nil, fmt.Errorf("slow: cancelled after %d of %d seconds", i-1, in.Seconds)
		case <-tick.C:
		}
		msg := fmt.Sprintf("slow: %d of %d seconds", i, in.Seconds)
		if in.Progress && token != nil {
			err := req.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{
				ProgressToken: token, Progress: float64(i), Total: float64(in.Seconds), Message: msg,
			})
			if err != nil {
				d.log.Warn("slow: progress notification failed", "error", err)
			}
		}
		if in.Log {
			if err := req.Session.Log(ctx, &mcp.LoggingMessageParams{Level: "info", Logger: "slow", Data: msg}); err != nil {
				d.log.Warn("slow: log notification failed", "error", err)
			}
		}
	}
	return textResult("slow: done after %d seconds", in.Seconds), nil, nil
}

type askInput struct {
	Prompt string `json:"prompt" jsonschema:"what to ask the model"`
}

// sampleID names the sampling request ask_model makes.
const sampleID = "sample"

// askModel asks the client for a completion through the SDK's multi
// round-trip input requests (see deleteNote for how both protocol eras are
// served), carrying the call's trace context onward (traceMeta).
func (d *demoServer) askModel(ctx context.Context, req *mcp.CallToolRequest, in askInput) (*mcp.CallToolResult, any, error) {
	if caps := req.ClientCapabilities(); caps == nil || caps.Sampling == nil {
		return nil, nil, errors.New("ask_model needs sampling, and this client did not declare the sampling capability")
	}
	answer, asked := req.Params.InputResponses[sampleID]
	if !asked {
		return &mcp.CallToolResult{InputRequests: mcp.InputRequestMap{sampleID: &mcp.CreateMessageParams{
			Meta:      traceMeta(ctx),
			MaxTokens: 1024,
			Messages:  []*mcp.SamplingMessage{{Role: "user", Content: &mcp.TextContent{Text: in.Prompt}}},
		}}}, nil, nil
	}
	var content []mcp.Content
	switch res := answer.(type) {
	case *mcp.CreateMessageWithToolsResult:
		content = res.Content
	case *mcp.CreateMessageResult:
		content = []mcp.Content{res.Content}
	default:
		return nil, nil, fmt.Errorf("unexpected answer to the sampling request: %T", answer)
	}
	var texts []string
	for _, c := range content {
		if t, ok := c.(*mcp.TextContent); ok {
			texts = append(texts, t.Text)
		}
	}
	if len(texts) == 0 {
		return nil, nil, errors.New("the model's answer has no text")
	}
	return textResult("%s", strings.Join(texts, "\n")), nil, nil
}

type toggleOutput struct {
	Extra bool `json:"extra"` // whether the tool "extra" is now listed
}

// toggleExtraTool changes the tool list after initialize, so the SDK sends
// notifications/tools/list_changed (debounced by about 10 ms). It changes
// only this worker's tool list, but it is a change, so a read-only session
// may not make it.
func (d *demoServer) toggleExtraTool(_ context.Context, _ *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, toggleOutput, error) {
	if err := d.refuseReadOnly("toggle_extra_tool"); err != nil {
		return nil, toggleOutput{}, err
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.extra {
		d.server.RemoveTools("extra")
		d.extra = false
		return textResult("removed the tool extra"), toggleOutput{Extra: false}, nil
	}
	mcp.AddTool(d.server, &mcp.Tool{
		Name:        "extra",
		Description: "A tool that exists only after toggle_extra_tool added it.",
		Annotations: readOnlyTool("Extra"),
	}, func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
		return textResult("extra: here"), nil, nil
	})
	d.extra = true
	return textResult("added the tool extra"), toggleOutput{Extra: true}, nil
}
