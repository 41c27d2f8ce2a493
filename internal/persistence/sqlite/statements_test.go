package sqlite

import (
	"errors"
	"path/filepath"
	"sync/atomic"
	"testing"

	"github.com/mattn/go-sqlite3"

	"github.com/crow-acp/crow-acp/internal/persistence"
)

// TestWriteStatementsStayPrepared checks that the write connection keeps
// its statements prepared: once a workload has run, running it again, with
// a rolled-back write in between, compiles no statement. SQLite calls the
// authorizer only while it compiles one.
func TestWriteStatementsStayPrepared(t *testing.T) {
	s := mustOpen(t, filepath.Join(t.TempDir(), "crow.db"))
	ctx := t.Context()
	var compiles atomic.Int64
	conn, err := s.db.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := conn.Raw(func(dc any) error {
		dc.(*sqlite3.SQLiteConn).RegisterAuthorizer(func(op int, _, _, _ string) int {
			if op != sqlite3.SQLITE_TRANSACTION { // BEGIN and COMMIT are not cached
				compiles.Add(1)
			}
			return sqlite3.SQLITE_OK
		})
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	conn.Close() // back to the pool: the store's one write connection

	must(t, s.CreateSession(ctx, &persistence.Session{ID: "s"}))
	workload := func() {
		t.Helper()
		m := &persistence.Message{Role: persistence.RoleAssistant, Content: "a", Status: persistence.StatusStreaming}
		must(t, s.AppendMessages(ctx, "s", m))
		m.Content = "ab"
		must(t, s.UpdateMessage(ctx, m))
		for _, n := range []int{1, 3, 70} {
			evs := make([]*persistence.Event, n)
			for i := range evs {
				evs[i] = &persistence.Event{Stream: "s", Kind: persistence.EventNotification, Body: []byte(`{}`)}
			}
			must(t, s.AppendEvents(ctx, evs...))
		}
	}
	workload()
	if compiles.Load() == 0 {
		t.Fatal("the authorizer saw no statement: the test is not watching the write connection")
	}
	before := compiles.Load()

	err = s.AppendMessages(ctx, "nope", &persistence.Message{Role: persistence.RoleUser})
	if !errors.Is(err, persistence.ErrNotFound) {
		t.Fatalf("append to an unknown session: %v", err)
	}
	workload()
	workload()
	if n := compiles.Load() - before; n != 0 {
		t.Errorf("repeating the workload compiled statements again (%d authorizer calls)", n)
	}
}
