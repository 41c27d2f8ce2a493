// Command mcpserver is a small MCP server over stdio for crow-acp's
// fixtures: "echo" (read-only) and "add_note" (changes state).
package main

import (
	"context"
	"log"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

type echoIn struct {
	Text string `json:"text"`
}

type noteIn struct {
	Note string `json:"note"`
}

func main() {
	s := mcp.NewServer(&mcp.Implementation{Name: "notes", Version: "1.0.0"}, nil)
	mcp.AddTool(s, &mcp.Tool{Name: "echo", Description: "Echo the text back.",
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}},
		func(_ context.Context, _ *mcp.CallToolRequest, in echoIn) (*mcp.CallToolResult, any, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "echo: " + in.Text}}}, nil, nil
		})
	var notes []string
	mcp.AddTool(s, &mcp.Tool{Name: "add_note", Description: "Store a note."},
		func(_ context.Context, _ *mcp.CallToolRequest, in noteIn) (*mcp.CallToolResult, any, error) {
			notes = append(notes, in.Note)
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "saved note " + in.Note}}}, nil, nil
		})
	if err := s.Run(context.Background(), &mcp.StdioTransport{}); err != nil {
		log.Fatal(err)
	}
}
