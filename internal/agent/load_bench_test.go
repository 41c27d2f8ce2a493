package agent

import (
	"context"
	"io"
	"path/filepath"
	"strings"
	"testing"

	"github.com/crow-acp/crow-acp/acp"
	"github.com/crow-acp/crow-acp/internal/agent/request"
	"github.com/crow-acp/crow-acp/internal/persistence/persistencetest"
	"github.com/crow-acp/crow-acp/internal/persistence/sqlite"
	"github.com/crow-acp/crow-acp/internal/provider/fakemodel"
)

// BenchmarkLoadSession10k is session/load of a 10,000-message session (the
// older half compacted) in the agent: the read, the replay encoded into
// frames (written to io.Discard) and the compaction check. crow-bench
// measures the same through the binary, with the frame log.
func BenchmarkLoadSession10k(b *testing.B) {
	ctx := context.Background()
	store := longStore(b)
	conn := acp.NewConn(strings.NewReader(""), io.Discard, acp.Options{})
	a := New(conn, store, nil, Config{Model: "bench"}, nil)
	defer a.Close()
	cwd := b.TempDir()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := a.LoadSession(ctx, &acp.LoadSessionRequest{SessionID: "long", Cwd: cwd}); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkLoadThenTurn10k is session/load of the same 10,000-message
// session followed by one turn (a model on loopback answering "ok"): what
// crow-bench reports as the next turn after load, without the process
// start. The model's window is large enough that the compaction check on
// load runs and finds nothing to compact.
func BenchmarkLoadThenTurn10k(b *testing.B) {
	ctx := context.Background()
	store := longStore(b)
	m := fakemodel.Start()
	defer m.Close()
	m.SetFallback(fakemodel.Reply{Text: "ok"})
	conn := acp.NewConn(strings.NewReader(""), io.Discard, acp.Options{})
	a := New(conn, store, newTestModel(m), Config{Model: "bench", NoTools: true, Models: []request.Model{{Name: "bench", ContextWindow: 8 << 20}}}, nil)
	defer a.Close()
	cwd := b.TempDir()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := a.LoadSession(ctx, &acp.LoadSessionRequest{SessionID: "long", Cwd: cwd}); err != nil {
			b.Fatal(err)
		}
		if _, err := prompt(a, "long", "next"); err != nil {
			b.Fatal(err)
		}
	}
}

// longStore is a SQLite store holding the 10,000-message session "long".
func longStore(b *testing.B) *sqlite.Store {
	ctx := context.Background()
	store, err := sqlite.Open(ctx, filepath.Join(b.TempDir(), "crow.db"))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { store.Close() })
	if err := persistencetest.FillLongSession(ctx, store, "long", 10_000); err != nil {
		b.Fatal(err)
	}
	return store
}
