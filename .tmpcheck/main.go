package main

import (
	"context"
	"fmt"
	"net/http"
	"os"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

type bearer struct{ tok string }

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.tok)
	return http.DefaultTransport.RoundTrip(r)
}

func main() {
	ctx := context.Background()
	c := mcp.NewClient(&mcp.Implementation{Name: "x", Version: "1"}, nil)
	s, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: os.Args[1], HTTPClient: &http.Client{Transport: bearer{os.Args[2]}}}, nil)
	if err != nil {
		fmt.Println("connect:", err)
		return
	}
	fmt.Println("protocol:", s.InitializeResult().ProtocolVersion)
	for _, n := range []string{"nope", "write_note"} {
		_, err := s.CallTool(ctx, &mcp.CallToolParams{Name: n, Arguments: map[string]any{"name": "a", "text": "b"}})
		fmt.Printf("%s: %v\n", n, err)
	}
}
