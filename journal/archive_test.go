package journal

import (
	"context"
	"strings"
	"testing"

	"github.com/crow-acp/crow-acp/acp"
	"github.com/crow-acp/crow-acp/persistence"
)

// TestArchiveClosesInTheLog: session/archive closes the session as
// session/close does, so the frame log says so once, with the method as
// the reason, and not again when the connection ends.
func TestArchiveClosesInTheLog(t *testing.T) {
	ctx := context.Background()
	store := openStore(t)
	const sid = "sess_0123456789abcdef0123456789abcdef"
	if err := store.CreateSession(ctx, &persistence.Session{ID: sid, Cwd: "/tmp"}); err != nil {
		t.Fatal(err)
	}
	j := Open(ctx, store, Options{ConnectionID: "conn_1", FlushInterval: 1 << 40})
	for _, f := range []struct {
		dir   acp.Direction
		frame string
	}{
		{acp.Inbound, `{"jsonrpc":"2.0","id":0,"method":"session/new","params":{"cwd":"/tmp","mcpServers":[]}}`},
		{acp.Outbound, `{"jsonrpc":"2.0","id":0,"result":{"sessionId":"` + sid + `"}}`},
		{acp.Inbound, `{"jsonrpc":"2.0","id":1,"method":"session/archive","params":{"sessionId":"` + sid + `"}}`},
		{acp.Outbound, `{"jsonrpc":"2.0","id":1,"result":{}}`},
	} {
		j.OnFrame(f.dir, []byte(f.frame))
	}
	j.Close()
	evs, err := store.Events(ctx, sid, persistence.EventFilter{})
	if err != nil {
		t.Fatal(err)
	}
	var closed []string
	for _, e := range evs {
		if e.Kind == persistence.EventSessionClosed {
			rec, _ := e.Record()
			closed = append(closed, string(rec))
		}
	}
	if len(closed) != 1 || !strings.Contains(closed[0], `"reason":"session/archive"`) {
		t.Fatalf("session_closed events %q, want one with reason session/archive", closed)
	}
}
