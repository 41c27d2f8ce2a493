package sqlite

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/crow-acp/crow-acp/internal/persistence"
)

// TestDiskFull fills the database up to a page limit (PRAGMA max_page_count
// on the write connection: SQLite's own SQLITE_FULL, as on a full disk) and
// checks that a failing write reports persistence.ErrStorageFull, changes
// nothing (no message, no seq, no event), and that the store works again
// once there is room.
func TestDiskFull(t *testing.T) {
	s := mustOpen(t, filepath.Join(t.TempDir(), "crow.db"))
	ctx := t.Context()
	must(t, s.CreateSession(ctx, &persistence.Session{ID: "s"}))
	must(t, s.AppendMessages(ctx, "s", &persistence.Message{Role: persistence.RoleUser, Content: "before"}))
	var pages int
	must(t, s.db.QueryRowContext(ctx, `PRAGMA page_count`).Scan(&pages))
	if _, err := s.db.ExecContext(ctx, `PRAGMA max_page_count = `+strconv.Itoa(pages)); err != nil {
		t.Fatal(err)
	}
	// Needs new pages.
	random := make([]byte, 32<<10)
	rand.Read(random)
	big := hex.EncodeToString(random)
	msgs := []*persistence.Message{
		{Role: persistence.RoleAssistant, Content: "small"},
		{Role: persistence.RoleAssistant, Content: big},
	}
	err := s.AppendMessages(ctx, "s", msgs...)
	if !errors.Is(err, persistence.ErrStorageFull) {
		t.Fatalf("append to a full database: %v, want ErrStorageFull", err)
	}
	if msgs[0].ID != 0 {
		t.Error("the failed batch filled its messages")
	}
	got, _ := s.Messages(ctx, "s", persistence.MessageFilter{})
	evs, _ := s.Events(ctx, "s", persistence.EventFilter{})
	if len(got) != 1 || len(evs) != 1 {
		t.Fatalf("after the failed write: %d messages, %d events; want 1 and 1 (nothing half-written)", len(got), len(evs))
	}
	if err := s.AppendEvents(ctx, &persistence.Event{Stream: "s", Kind: persistence.EventRequest, Body: []byte(big)}); !errors.Is(err, persistence.ErrStorageFull) {
		t.Errorf("event to a full database: %v, want ErrStorageFull", err)
	}

	if _, err := s.db.ExecContext(ctx, `PRAGMA max_page_count = 1000000`); err != nil {
		t.Fatal(err)
	}
	if err := s.AppendMessages(ctx, "s", msgs...); err != nil {
		t.Fatalf("after room was made: %v", err)
	}
	if msgs[0].Seq != 2 {
		t.Errorf("seq after the failed write = %d, want 2 (none was used up)", msgs[0].Seq)
	}
}

// TestReadOnlyDatabase: writes to a read-only database (query_only on the
// write connection: SQLite's SQLITE_READONLY) report ErrStorageReadOnly and
// reads go on.
func TestReadOnlyDatabase(t *testing.T) {
	s := mustOpen(t, filepath.Join(t.TempDir(), "crow.db"))
	ctx := t.Context()
	must(t, s.CreateSession(ctx, &persistence.Session{ID: "s"}))
	if _, err := s.db.ExecContext(ctx, `PRAGMA query_only = 1`); err != nil {
		t.Fatal(err)
	}
	defer s.db.ExecContext(ctx, `PRAGMA query_only = 0`)
	err := s.AppendMessages(ctx, "s", &persistence.Message{Role: persistence.RoleUser, Content: "x"})
	if !errors.Is(err, persistence.ErrStorageReadOnly) {
		t.Fatalf("append to a read-only database: %v, want ErrStorageReadOnly", err)
	}
	if _, err := s.GetSession(ctx, "s"); err != nil {
		t.Errorf("read from a read-only database: %v", err)
	}
}
