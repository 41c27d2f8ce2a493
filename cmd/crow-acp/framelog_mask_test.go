package main

import (
	"bytes"
	"context"
	"testing"
	"time"

	"github.com/crow-acp/crow-acp/persistence"
)

// Issue 37 item 10: a client's frames that named an MCP server's secret in
// a way the frame log's mask did not read (a duplicated key, whose last
// occurrence the agent uses; a key in another case, which encoding/json
// matches; a notification; trailing bytes) kept the secret in the
// database. Sent to the real binary, none of them may leave it there: every
// frame of every stream is read back.
func TestFrameLogMasksMCPSecrets(t *testing.T) {
	bin := testBinary(t)
	_, db, env, cwd := procSetup(t)
	p := startProc(t, bin, env)
	p.send(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":1}}`)
	p.until("0", 10*time.Second)
	server := func(secret string) string {
		return `{"name":"tools","command":"/nonexistent/mcp","args":[],"env":[{"name":"TOKEN","value":"` + secret + `"}]}`
	}
	params := `"cwd":` + quote(cwd) + `,`
	p.send(`{"jsonrpc":"2.0","id":1,"method":"session/new","params":{` + params + `"mcpServers":[],"mcpServers":[` + server("SECRET-duplicate-4711") + `]}}`)
	dup := sessionIDOf(t, p.until("1", 10*time.Second))
	p.send(`{"jsonrpc":"2.0","id":2,"method":"session/new","params":{` + params + `"MCPServers":[` +
		`{"name":"tools","command":"/nonexistent/mcp","args":[],"ENV":[{"name":"TOKEN","Value":"SECRET-case-4711"}]}]}}`)
	cased := sessionIDOf(t, p.until("2", 10*time.Second))
	p.send(`{"jsonrpc":"2.0","method":"session/new","params":{` + params + `"mcpServers":[` + server("SECRET-notification-4711") + `]}}`)
	p.send(`{"jsonrpc":"2.0","id":3,"method":"session/new","params":{` + params + `"mcpServers":[` + server("SECRET-trailing-4711") + `]}} x`)
	p.until("null", 10*time.Second) // -32700: the line is not one JSON value
	p.send(`{"jsonrpc":"2.0","id":4,"method":"session/list","params":{}}`)
	p.until("4", 10*time.Second)
	p.close()

	streams := []string{dup, cased}
	withStore(t, db, func(s persistence.Store) error {
		evs, err := s.Events(context.Background(), dup, persistence.EventFilter{})
		if err != nil || len(evs) == 0 {
			t.Fatalf("no events for %s: %v", dup, err)
		}
		streams = append(streams, evs[0].ConnectionID)
		all, _, err := s.ListSessions(context.Background(), persistence.ListSessionsOptions{Limit: persistence.MaxListLimit})
		for _, o := range all {
			streams = append(streams, o.ID)
		}
		return err
	})
	frames := 0
	for _, stream := range streams {
		for _, e := range storedEvents(t, db, stream) {
			fs, err := e.Frames(persistence.NewBudget(persistence.MaxDecoded))
			if err != nil {
				t.Fatal(err)
			}
			for _, f := range fs {
				frames++
				if bytes.Contains(f, []byte("SECRET-")) || bytes.Contains(e.Body, []byte("SECRET-")) {
					t.Errorf("the frame log of %s keeps an MCP server's secret: %s", stream, f)
				}
			}
		}
	}
	if frames < 10 {
		t.Fatalf("only %d frames read back", frames)
	}
}
