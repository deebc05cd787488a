package demo

import (
	"context"
	"slices"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The published list must match the annotations, or a read-only user would be shown a tool
// that writes, or miss one that does not.
func TestReadOnlyToolsMatchAnnotations(t *testing.T) {
	srv, err := NewServer(Options{User: "u", DataDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	ct, st := mcp.NewInMemoryTransports()
	ctx := context.Background()
	ss, err := srv.Connect(ctx, st, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ss.Close()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "t", Version: "1"}, nil).Connect(ctx, ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	// The extra tool exists only after toggle_extra_tool; toggle it on to see its annotation.
	if _, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "toggle_extra_tool"}); err != nil {
		t.Fatal(err)
	}
	res, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	var annotated []string
	for _, tool := range res.Tools {
		if tool.Annotations != nil && tool.Annotations.ReadOnlyHint {
			annotated = append(annotated, tool.Name)
		}
	}
	want := slices.Clone(ReadOnlyTools)
	slices.Sort(want)
	slices.Sort(annotated)
	if !slices.Equal(want, annotated) {
		t.Errorf("ReadOnlyTools = %v, tools annotated read-only = %v", want, annotated)
	}
}
