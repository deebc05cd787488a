package demo

import (
	"errors"
	"fmt"
	"log/slog"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// ServerName is the name the demo server reports in serverInfo.
const ServerName = "gemgate-demo"

// Version is the demo server's version in serverInfo.
const Version = "0.1.0"

// demoServer holds what the tool handlers share.
type demoServer struct {
	opts   Options
	notes  noteStore
	log    *slog.Logger
	server *mcp.Server

	mu    sync.Mutex // guards extra
	extra bool       // whether the tool "extra" is currently added
}

// NewServer builds the demo MCP server for one worker. It fails when the
// options cannot describe a usable worker (a data directory without a user).
func NewServer(o Options) (*mcp.Server, error) {
	if o.DataDir != "" && o.User == "" {
		return nil, errors.New("demo worker: a data directory needs a user (" + EnvUser + " is empty)")
	}
	d := &demoServer{opts: o, notes: newNoteStore(o), log: o.logger()}
	d.server = mcp.NewServer(&mcp.Implementation{Name: ServerName, Version: Version}, &mcp.ServerOptions{
		Logger: d.log,
		Instructions: "gemgate demo worker: whoami shows the identity the gateway assigned; " +
			"the notes tools keep a small per-user store.",
	})
	d.addTools()
	return d.server, nil
}

// refuseReadOnly is the worker's own guard, behind the gateway's policy:
// a read-only session never mutates, whatever reaches the worker.
func (d *demoServer) refuseReadOnly(tool string) error {
	if d.opts.ReadOnly {
		return fmt.Errorf("read-only session: %s is not allowed", tool)
	}
	return nil
}

func boolPtr(b bool) *bool { return &b }

// Annotations for the two kinds of tools.
var (
	readOnlyTool = func(title string) *mcp.ToolAnnotations {
		return &mcp.ToolAnnotations{Title: title, ReadOnlyHint: true, OpenWorldHint: boolPtr(false)}
	}
	mutatingTool = func(title string, destructive bool) *mcp.ToolAnnotations {
		return &mcp.ToolAnnotations{Title: title, DestructiveHint: boolPtr(destructive), IdempotentHint: true, OpenWorldHint: boolPtr(false)}
	}
)

func (d *demoServer) addTools() {
	s := d.server
	mcp.AddTool(s, &mcp.Tool{
		Name:        "whoami",
		Description: "Show the user, session and access (read-only or not) the gateway assigned to this session.",
		Annotations: readOnlyTool("Who am I"),
	}, d.whoami)
	mcp.AddTool(s, &mcp.Tool{
		Name:        "list_notes",
		Description: "List your notes.",
		Annotations: readOnlyTool("List notes"),
	}, d.listNotes)
	mcp.AddTool(s, &mcp.Tool{
		Name:        "read_note",
		Description: "Read one of your notes.",
		Annotations: readOnlyTool("Read note"),
	}, d.readNote)
	mcp.AddTool(s, &mcp.Tool{
		Name:        "search_notes",
		Description: "Find the lines of your notes that contain a text (case-insensitive).",
		Annotations: readOnlyTool("Search notes"),
	}, d.searchNotes)
	mcp.AddTool(s, &mcp.Tool{
		Name:        "write_note",
		Description: "Create or replace one of your notes (up to 1 MiB of text).",
		Annotations: mutatingTool("Write note", false),
	}, d.writeNote)
	mcp.AddTool(s, &mcp.Tool{
		Name:        "delete_note",
		Description: "Delete one of your notes, after asking you to confirm when your client supports elicitation.",
		Annotations: mutatingTool("Delete note", true),
	}, d.deleteNote)
	mcp.AddTool(s, &mcp.Tool{
		Name:        "slow",
		Description: "Wait some seconds, optionally reporting progress and log messages each second; stops when cancelled.",
		Annotations: readOnlyTool("Slow"),
	}, d.slow)
	mcp.AddTool(s, &mcp.Tool{
		Name:        "echo",
		Description: "Return the text unchanged.",
		Annotations: readOnlyTool("Echo"),
	}, d.echo)
	mcp.AddTool(s, &mcp.Tool{
		Name:        "ask_model",
		Description: "Ask your client's model (sampling) to answer a prompt, and return its answer.",
		Annotations: &mcp.ToolAnnotations{Title: "Ask model", ReadOnlyHint: true, OpenWorldHint: boolPtr(true)},
	}, d.askModel)
	mcp.AddTool(s, &mcp.Tool{
		Name:        "toggle_extra_tool",
		Description: "Add the tool \"extra\" when it is absent, remove it when present; the server then announces that its tool list changed.",
		Annotations: &mcp.ToolAnnotations{Title: "Toggle extra tool", DestructiveHint: boolPtr(false), OpenWorldHint: boolPtr(false)},
	}, d.toggleExtraTool)
}
