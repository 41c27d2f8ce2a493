// Command emptyagent is the floor crow-bench compares crow-acp's start-up
// with: a Go process that reads one line from stdin and answers it as an
// ACP initialize, with nothing else to set up. It is built by the bench
// into its temporary directory and never shipped.
package main

import (
	"bufio"
	"encoding/json"
	"io"
	"os"
)

func main() {
	in := bufio.NewReader(os.Stdin)
	line, err := in.ReadBytes('\n')
	if err != nil {
		os.Exit(1)
	}
	var req struct {
		ID json.RawMessage `json:"id"`
	}
	if json.Unmarshal(line, &req) != nil || len(req.ID) == 0 {
		os.Exit(1)
	}
	out, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": req.ID, "result": map[string]any{
		"protocolVersion": 1, "agentCapabilities": map[string]any{}, "authMethods": []any{},
	}})
	_, _ = os.Stdout.Write(append(out, '\n'))
	// Like an agent, it then serves until stdin ends.
	_, _ = io.Copy(io.Discard, in)
}
