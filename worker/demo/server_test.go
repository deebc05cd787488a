//lint:file-ignore SA1019 logging and sampling are deprecated from 2026-07-28 but still part of 2025-11-25, which gemgate serves; the demo exercises them on purpose.

package demo

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

func TestToolsList(t *testing.T) {
	cs := connect(t, Options{User: "alice", Session: "s1"}, nil, legacyVersion)
	res, err := cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := cs.InitializeResult().ServerInfo.Name; got != "gemgate-demo" {
		t.Errorf("server name = %q, want gemgate-demo", got)
	}
	type hints struct {
		ReadOnly    bool
		Destructive *bool
	}
	no, yes := false, true
	want := map[string]hints{
		"whoami":            {ReadOnly: true},
		"list_notes":        {ReadOnly: true},
		"read_note":         {ReadOnly: true},
		"search_notes":      {ReadOnly: true},
		"slow":              {ReadOnly: true},
		"echo":              {ReadOnly: true},
		"ask_model":         {ReadOnly: true},
		"write_note":        {Destructive: &no},
		"delete_note":       {Destructive: &yes},
		"toggle_extra_tool": {Destructive: &no},
	}
	got := map[string]hints{}
	for _, tool := range res.Tools {
		if tool.Annotations == nil {
			t.Errorf("tool %s has no annotations", tool.Name)
			continue
		}
		h := hints{ReadOnly: tool.Annotations.ReadOnlyHint}
		if !h.ReadOnly {
			h.Destructive = tool.Annotations.DestructiveHint
		}
		got[tool.Name] = h
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("tools (-want +got):\n%s", diff)
	}
}

func TestWhoami(t *testing.T) {
	for _, ro := range []bool{false, true} {
		cs := connect(t, Options{User: "alice@example.com", Session: "sess-7", ReadOnly: ro}, nil, legacyVersion)
		res := call(t, cs, "whoami", map[string]any{})
		mustOK(t, res)
		var got whoamiOutput
		raw, _ := json.Marshal(res.StructuredContent)
		if err := json.Unmarshal(raw, &got); err != nil {
			t.Fatalf("structured content %s: %v", raw, err)
		}
		want := whoamiOutput{User: "alice@example.com", Session: "sess-7", ReadOnly: ro}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("whoami (-want +got):\n%s", diff)
		}
		if !strings.Contains(text(res), "user=alice@example.com") {
			t.Errorf("whoami text %q lacks the user", text(res))
		}
		if !strings.Contains(string(raw), `"read_only"`) {
			t.Errorf("structured content %s lacks read_only", raw)
		}
	}
}

func TestEchoOneMiB(t *testing.T) {
	cs := connect(t, Options{User: "alice"}, nil, legacyVersion)
	var b strings.Builder
	for b.Len() < 1<<20 {
		b.WriteString("é\"\\\n\t<>&\u2028 0123456789 ")
	}
	payload := b.String()[:1<<20]
	if got := mustOK(t, call(t, cs, "echo", map[string]any{"text": payload})); got != payload {
		t.Fatalf("echo changed the payload (len %d, want %d)", len(got), len(payload))
	}
	if got := mustOK(t, call(t, cs, "echo", map[string]any{"text": ""})); got != "" {
		t.Fatalf("echo of empty text = %q", got)
	}
}

func TestSlowProgressAndLog(t *testing.T) {
	var progress, logs atomic.Int32
	var lastProgress atomic.Value
	copts := &mcp.ClientOptions{
		ProgressNotificationHandler: func(_ context.Context, req *mcp.ProgressNotificationClientRequest) {
			if req.Params.ProgressToken == "tok" {
				progress.Add(1)
				lastProgress.Store(req.Params.Progress)
			}
		},
		LoggingMessageHandler: func(_ context.Context, req *mcp.LoggingMessageRequest) {
			if req.Params.Logger == "slow" {
				logs.Add(1)
			}
		},
	}
	cs := connect(t, Options{User: "alice", tick: 5 * time.Millisecond}, copts, legacyVersion)
	if err := cs.SetLoggingLevel(context.Background(), &mcp.SetLoggingLevelParams{Level: "info"}); err != nil {
		t.Fatal(err)
	}

	tests := []struct {
		name                   string
		args                   map[string]any
		token                  bool
		wantProgress, wantLogs int32
	}{
		{"progress and log", map[string]any{"seconds": 3, "progress": true, "log": true}, true, 3, 3},
		{"progress without token", map[string]any{"seconds": 2, "progress": true}, false, 0, 0},
		{"neither", map[string]any{"seconds": 2}, true, 0, 0},
		{"log only", map[string]any{"seconds": 2, "log": true}, true, 0, 2},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			progress.Store(0)
			logs.Store(0)
			params := &mcp.CallToolParams{Name: "slow", Arguments: tc.args}
			if tc.token {
				params.SetProgressToken("tok")
			}
			res, err := cs.CallTool(context.Background(), params)
			if err != nil {
				t.Fatal(err)
			}
			mustOK(t, res)
			// Notifications are delivered asynchronously to the handlers.
			waitFor(t, time.Second, "notifications", func() bool {
				return progress.Load() >= tc.wantProgress && logs.Load() >= tc.wantLogs
			})
			time.Sleep(20 * time.Millisecond)
			if p, l := progress.Load(), logs.Load(); p != tc.wantProgress || l != tc.wantLogs {
				t.Errorf("got %d progress and %d log notifications, want %d and %d", p, l, tc.wantProgress, tc.wantLogs)
			}
			if tc.wantProgress > 0 && lastProgress.Load() != float64(tc.wantProgress) {
				t.Errorf("last progress = %v, want %d", lastProgress.Load(), tc.wantProgress)
			}
		})
	}
}

func TestSlowRejectsBadSeconds(t *testing.T) {
	cs := connect(t, Options{User: "alice"}, nil, legacyVersion)
	for _, s := range []int{-1, 601} {
		mustFail(t, call(t, cs, "slow", map[string]any{"seconds": s}), "seconds must be between 0 and 600")
	}
}

func TestSlowCancelled(t *testing.T) {
	stderr := &syncBuffer{}
	started := make(chan struct{}, 1)
	copts := &mcp.ClientOptions{
		ProgressNotificationHandler: func(context.Context, *mcp.ProgressNotificationClientRequest) {
			select {
			case started <- struct{}{}:
			default:
			}
		},
	}
	cs := connect(t, Options{User: "alice", Stderr: stderr, tick: 10 * time.Millisecond}, copts, legacyVersion)

	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		params := &mcp.CallToolParams{Name: "slow", Arguments: map[string]any{"seconds": 600, "progress": true}}
		params.SetProgressToken(1)
		_, err := cs.CallTool(ctx, params)
		done <- err
	}()
	select {
	case <-started:
	case <-time.After(5 * time.Second):
		t.Fatal("slow sent no progress")
	}
	cancel()
	cancelled := time.Now()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Errorf("CallTool error = %v, want context.Canceled", err)
	}
	// The client sends notifications/cancelled; the worker must stop promptly.
	waitFor(t, time.Second, `"slow: cancelled" on stderr`, func() bool {
		return strings.Contains(stderr.String(), "slow: cancelled\n")
	})
	if d := time.Since(cancelled); d > 500*time.Millisecond {
		t.Errorf("slow stopped %v after the cancellation", d)
	}
	// The session stays usable.
	mustOK(t, call(t, cs, "echo", map[string]any{"text": "still here"}))
}

func TestAskModel(t *testing.T) {
	for _, version := range []string{legacyVersion, ""} {
		t.Run("version="+version, func(t *testing.T) {
			var prompt atomic.Value
			copts := &mcp.ClientOptions{
				CreateMessageHandler: func(_ context.Context, req *mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
					if len(req.Params.Messages) == 1 {
						if tc, ok := req.Params.Messages[0].Content.(*mcp.TextContent); ok {
							prompt.Store(tc.Text)
						}
					}
					return &mcp.CreateMessageResult{Role: "assistant", Model: "test-model", Content: &mcp.TextContent{Text: "forty-two"}}, nil
				},
			}
			cs := connect(t, Options{User: "alice"}, copts, version)
			if got := mustOK(t, call(t, cs, "ask_model", map[string]any{"prompt": "what is six times seven?"})); got != "forty-two" {
				t.Errorf("ask_model = %q, want forty-two", got)
			}
			if got := prompt.Load(); got != "what is six times seven?" {
				t.Errorf("the model was asked %v", got)
			}

			plain := connect(t, Options{User: "alice"}, nil, version)
			mustFail(t, call(t, plain, "ask_model", map[string]any{"prompt": "hi"}), "did not declare the sampling capability")
		})
	}
}

func TestToggleExtraTool(t *testing.T) {
	changed := make(chan struct{}, 10)
	copts := &mcp.ClientOptions{
		ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) { changed <- struct{}{} },
	}
	cs := connect(t, Options{User: "alice"}, copts, legacyVersion)
	hasExtra := func() bool {
		res, err := cs.ListTools(context.Background(), nil)
		if err != nil {
			t.Fatal(err)
		}
		for _, tool := range res.Tools {
			if tool.Name == "extra" {
				return true
			}
		}
		return false
	}
	for i, want := range []bool{true, false, true} {
		mustOK(t, call(t, cs, "toggle_extra_tool", map[string]any{}))
		select {
		case <-changed:
		case <-time.After(5 * time.Second):
			t.Fatalf("toggle %d: no notifications/tools/list_changed", i)
		}
		if got := hasExtra(); got != want {
			t.Errorf("toggle %d: extra listed = %v, want %v", i, got, want)
		}
	}
	if got := mustOK(t, call(t, cs, "extra", map[string]any{})); got != "extra: here" {
		t.Errorf("extra = %q", got)
	}
}

func TestNewServerNeedsUserForDataDir(t *testing.T) {
	if _, err := NewServer(Options{DataDir: t.TempDir()}); err == nil {
		t.Error("NewServer accepted a data directory without a user")
	}
	cs := connect(t, Options{}, nil, legacyVersion)
	mustFail(t, call(t, cs, "list_notes", map[string]any{}), "notes store not configured")
}

func TestOptionsFromEnv(t *testing.T) {
	tests := []struct {
		readOnly, chatter string
		set               bool
		wantRO, wantChat  bool
	}{
		{readOnly: "0", chatter: "1", set: true, wantRO: false, wantChat: true},
		{readOnly: "1", chatter: "0", set: true, wantRO: true, wantChat: false},
		{readOnly: "yes", set: true, wantRO: true},
		{set: false, wantRO: true}, // unset fails closed
	}
	for _, tc := range tests {
		t.Setenv(EnvUser, "bob")
		t.Setenv(EnvSession, "s9")
		t.Setenv(EnvDataDir, "/data")
		t.Setenv(EnvChatter, tc.chatter)
		t.Setenv(EnvReadOnly, tc.readOnly)
		if !tc.set {
			os.Unsetenv(EnvReadOnly) // t.Setenv above restores it
		}
		o := OptionsFromEnv()
		if o.User != "bob" || o.Session != "s9" || o.DataDir != "/data" || o.ReadOnly != tc.wantRO || o.Chatter != tc.wantChat || o.Logger == nil {
			t.Errorf("GEMGATE_READ_ONLY=%q GEMGATE_DEMO_CHATTER=%q: got %+v", tc.readOnly, tc.chatter, o)
		}
	}
}
