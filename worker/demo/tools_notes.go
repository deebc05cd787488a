package demo

import (
	"context"
	"fmt"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

func textResult(format string, args ...any) *mcp.CallToolResult {
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: fmt.Sprintf(format, args...)}}}
}

type noteListOutput struct {
	Notes []noteInfo `json:"notes"`
}

func (d *demoServer) listNotes(_ context.Context, _ *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, noteListOutput, error) {
	notes, err := d.notes.list()
	if err != nil {
		return nil, noteListOutput{}, err
	}
	if len(notes) == 0 {
		return textResult("no notes"), noteListOutput{Notes: notes}, nil
	}
	var b strings.Builder
	for _, n := range notes {
		fmt.Fprintf(&b, "%s (%d bytes, %s)\n", n.Name, n.Size, n.Modified)
	}
	return textResult("%s", b.String()), noteListOutput{Notes: notes}, nil
}

type noteNameInput struct {
	Name string `json:"name" jsonschema:"the note's name: 1 to 64 characters from A-Z a-z 0-9 . _ - not starting with a dot"`
}

func (d *demoServer) readNote(_ context.Context, _ *mcp.CallToolRequest, in noteNameInput) (*mcp.CallToolResult, any, error) {
	text, err := d.notes.read(in.Name)
	if err != nil {
		return nil, nil, err
	}
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: text}}}, nil, nil
}

type searchInput struct {
	Query string `json:"query" jsonschema:"text to look for, case-insensitive"`
}

type searchOutput struct {
	Matches []noteMatch `json:"matches"`
}

func (d *demoServer) searchNotes(_ context.Context, _ *mcp.CallToolRequest, in searchInput) (*mcp.CallToolResult, searchOutput, error) {
	matches, err := d.notes.search(in.Query)
	if err != nil {
		return nil, searchOutput{}, err
	}
	if len(matches) == 0 {
		return textResult("no match for %q", in.Query), searchOutput{Matches: matches}, nil
	}
	var b strings.Builder
	for _, m := range matches {
		if m.Line == 0 {
			fmt.Fprintf(&b, "%s (name)\n", m.Name)
			continue
		}
		fmt.Fprintf(&b, "%s:%d: %s\n", m.Name, m.Line, m.Text)
	}
	return textResult("%s", b.String()), searchOutput{Matches: matches}, nil
}

type writeInput struct {
	Name string `json:"name" jsonschema:"the note's name: 1 to 64 characters from A-Z a-z 0-9 . _ - not starting with a dot"`
	Text string `json:"text" jsonschema:"the note's text, up to 1 MiB"`
}

func (d *demoServer) writeNote(_ context.Context, _ *mcp.CallToolRequest, in writeInput) (*mcp.CallToolResult, any, error) {
	if err := d.refuseReadOnly("write_note"); err != nil {
		return nil, nil, err
	}
	if err := d.notes.write(in.Name, in.Text); err != nil {
		return nil, nil, err
	}
	d.log.Info("note written", "note", in.Name, "bytes", len(in.Text))
	return textResult("wrote note %q (%d bytes)", in.Name, len(in.Text)), nil, nil
}

// confirmDeleteID names the elicitation delete_note asks for.
const confirmDeleteID = "confirm_delete"

// deleteNote asks the user to confirm through the SDK's multi round-trip
// input requests: for clients on protocol versions before 2026-07-28 the SDK
// sends them an elicitation/create request and calls this handler again
// with the answer; newer clients answer in a retried tools/call. The
// confirmation protects the user from a careless model, not the store from
// the client: a client can always answer for its user. The question
// carries the trace context of the call's span onward (traceMeta).
func (d *demoServer) deleteNote(ctx context.Context, req *mcp.CallToolRequest, in noteNameInput) (*mcp.CallToolResult, any, error) {
	if err := d.refuseReadOnly("delete_note"); err != nil {
		return nil, nil, err
	}
	ok, err := d.notes.exists(in.Name)
	if err != nil {
		return nil, nil, err
	}
	if !ok {
		return nil, nil, fmt.Errorf("note %q not found", in.Name)
	}
	if caps := req.ClientCapabilities(); caps != nil && caps.Elicitation != nil {
		answer, asked := req.Params.InputResponses[confirmDeleteID]
		if !asked {
			return &mcp.CallToolResult{InputRequests: mcp.InputRequestMap{confirmDeleteID: &mcp.ElicitParams{
				Meta:            traceMeta(ctx),
				Mode:            "form",
				Message:         fmt.Sprintf("Delete the note %q? This cannot be undone.", in.Name),
				RequestedSchema: map[string]any{"type": "object", "properties": map[string]any{}},
			}}}, nil, nil
		}
		res, isElicit := answer.(*mcp.ElicitResult)
		if !isElicit {
			return nil, nil, fmt.Errorf("unexpected answer to the delete confirmation: %T", answer)
		}
		if res.Action != "accept" {
			return textResult("note %q not deleted: the confirmation was answered %q", in.Name, res.Action), nil, nil
		}
	}
	if err := d.notes.remove(in.Name); err != nil {
		return nil, nil, err
	}
	d.log.Info("note deleted", "note", in.Name)
	return textResult("deleted note %q", in.Name), nil, nil
}
