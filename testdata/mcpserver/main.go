// Command mcpserver is a small MCP server over stdio for crow-acp's
// fixtures: "echo" (read-only) and "add_note" (changes state); with -ask
// also "pick", which asks the user to pick a colour (elicitation/create),
// "code", which asks for a code matching the pattern the model names, and
// "sign_in", which sends the user to a page (the URL the model names, or
// notes' own).
package main

import (
	"context"
	"flag"
	"fmt"
	"log"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

type echoIn struct {
	Text string `json:"text"`
}

type noteIn struct {
	Note string `json:"note"`
}

type codeIn struct {
	Pattern string `json:"pattern"`
}

type signInIn struct {
	URL string `json:"url,omitempty"`
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
	ask := flag.Bool("ask", false, "offer the pick tool")
	flag.Parse()
	if *ask {
		mcp.AddTool(s, &mcp.Tool{Name: "pick", Description: "Let the user pick a colour."},
			// The 2026-07-28 way (SEP-2322): the first call returns the
			// question; the client's SDK asks it and calls again with the answer.
			func(_ context.Context, req *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
				resp, ok := req.Params.InputResponses["colour"]
				if !ok {
					return &mcp.CallToolResult{InputRequests: mcp.InputRequestMap{"colour": &mcp.ElicitParams{Message: "Which colour?",
						RequestedSchema: map[string]any{"type": "object", "required": []string{"colour"},
							"properties": map[string]any{"colour": map[string]any{"type": "string", "title": "Colour", "enum": []string{"red", "green"}}}}}}}, nil, nil
				}
				text := "no answer"
				if res, ok := resp.(*mcp.ElicitResult); ok && res.Action == "accept" {
					text = fmt.Sprintf("picked %v", res.Content["colour"])
				} else if ok {
					text = "no colour: " + res.Action
				}
				return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: text}}}, nil, nil
			})
	}
	if *ask {
		// A URL elicitation, as a server asks a person to sign in on a page.
		// (No elicitation/complete: it may overtake the tool's result, and
		// a fixture's frames are strictly ordered.)
		mcp.AddTool(s, &mcp.Tool{Name: "sign_in", Description: "Sign in on a web page."},
			func(_ context.Context, req *mcp.CallToolRequest, in signInIn) (*mcp.CallToolResult, any, error) {
				resp, ok := req.Params.InputResponses["login"]
				if !ok {
					page := in.URL
					if page == "" {
						page = "https://notes.example/login?s=1"
					}
					return &mcp.CallToolResult{InputRequests: mcp.InputRequestMap{"login": &mcp.ElicitParams{Mode: "url",
						Message: "Sign in to notes", URL: page, ElicitationID: "login-1"}}}, nil, nil
				}
				res, _ := resp.(*mcp.ElicitResult)
				if res == nil || res.Action != "accept" {
					return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "not signed in"}}}, nil, nil
				}
				return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "signed in"}}}, nil, nil
			})
		// A form field with a pattern, which the client's MCP SDK checks
		// the answer against.
		mcp.AddTool(s, &mcp.Tool{Name: "code", Description: "Ask the user for a code."},
			func(_ context.Context, req *mcp.CallToolRequest, in codeIn) (*mcp.CallToolResult, any, error) {
				resp, ok := req.Params.InputResponses["code"]
				if !ok {
					return &mcp.CallToolResult{InputRequests: mcp.InputRequestMap{"code": &mcp.ElicitParams{Message: "Which code?",
						RequestedSchema: map[string]any{"type": "object", "required": []string{"code"},
							"properties": map[string]any{"code": map[string]any{"type": "string", "title": "Code", "pattern": in.Pattern}}}}}}, nil, nil
				}
				text := "no answer"
				if res, ok := resp.(*mcp.ElicitResult); ok && res.Action == "accept" {
					text = fmt.Sprintf("code %v", res.Content["code"])
				} else if ok {
					text = "no code: " + res.Action
				}
				return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: text}}}, nil, nil
			})
	}
	if err := s.Run(context.Background(), &mcp.StdioTransport{}); err != nil {
		log.Fatal(err)
	}
}
