package agent

import (
	"bytes"
	"context"
	"strings"
	"sync"
	"testing"

	"github.com/crow-acp/crow-acp/acp"
	"github.com/crow-acp/crow-acp/internal/agent/request"
)

// pipeEnd is the client's end of the agent's stdout: it keeps what was
// written and counts the writes.
type pipeEnd struct {
	mu     sync.Mutex
	buf    bytes.Buffer
	writes int
}

func (p *pipeEnd) Write(b []byte) (int, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.writes++
	return p.buf.Write(b)
}

// TestLoadReplaysInFewWrites: session/load over a connection writes the
// replay's frames in batches (a system call, and a wakeup of the client,
// per batch instead of per frame), and they are the bytes a replay of one
// write per frame sends.
func TestLoadReplaysInFewWrites(t *testing.T) {
	ctx := context.Background()
	stored, id, _ := storedSession(t, 40)
	cwd := t.TempDir()
	load := func(batching bool) (*pipeEnd, int) {
		out := &pipeEnd{}
		frames := 0
		conn := acp.NewConn(strings.NewReader(""), out, acp.Options{OnFrame: func(acp.Direction, []byte) { frames++ }})
		var client acp.Client = conn
		if !batching {
			client = struct{ acp.Client }{conn} // hides Batch
		}
		a := New(client, stored, nil, Config{Model: "big", Models: []request.Model{{Name: "big", ContextWindow: 100000}}}, nil)
		defer a.Close()
		if _, err := a.LoadSession(ctx, &acp.LoadSessionRequest{SessionID: id, Cwd: cwd}); err != nil {
			t.Fatal(err)
		}
		out.mu.Lock()
		defer out.mu.Unlock()
		return out, frames
	}
	one, oneFrames := load(false)
	batched, frames := load(true)
	if !bytes.Equal(batched.buf.Bytes(), one.buf.Bytes()) || frames != oneFrames {
		t.Fatalf("batched replay: %d frames, %d bytes; one write each: %d frames, %d bytes", frames, batched.buf.Len(), oneFrames, one.buf.Len())
	}
	if frames < 80 {
		t.Fatalf("only %d frames: the session is too short to tell", frames)
	}
	if batched.writes > frames/10 {
		t.Errorf("%d writes for %d frames, want at most %d", batched.writes, frames, frames/10)
	}
}
