package crowtest

import (
	"context"
	"testing"

	"github.com/crow-acp/crow-acp/internal/persistence"
	"github.com/crow-acp/crow-acp/internal/persistence/backend"
	"github.com/crow-acp/crow-acp/internal/persistence/projection"
	"github.com/crow-acp/crow-acp/internal/persistence/sqlite"
)

// Messages opens the database db (a SQLite path or a PostgreSQL URL)
// after the agent has exited and returns every stored message of session
// sid.
func Messages(t testing.TB, db, sid string) []persistence.Message {
	t.Helper()
	var msgs []persistence.Message
	WithStore(t, db, func(s persistence.Store) (err error) {
		msgs, err = s.Messages(context.Background(), sid, persistence.MessageFilter{})
		return err
	})
	return msgs
}

// Events is Messages for the session's event log.
func Events(t testing.TB, db, sid string) []persistence.Event {
	t.Helper()
	var evs []persistence.Event
	WithStore(t, db, func(s persistence.Store) (err error) {
		evs, err = s.Events(context.Background(), sid, persistence.EventFilter{})
		return err
	})
	return evs
}

// WithStore opens the database db for read and closes it after.
func WithStore(t testing.TB, db string, read func(persistence.Store) error) {
	t.Helper()
	s, err := backend.Open(context.Background(), db)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := read(s); err != nil {
		t.Fatal(err)
	}
}

// VerifySessions checks every session in the SQLite database at path: its
// messages and compactions, rebuilt from its event log, equal the live
// tables, and the log holds the session's frames (unless the test already
// failed).
func VerifySessions(t testing.TB, path string) {
	t.Helper()
	if t.Failed() {
		return
	}
	ctx := context.Background()
	s, err := sqlite.Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	sessions, _, err := s.ListSessions(ctx, persistence.ListSessionsOptions{Limit: persistence.MaxListLimit})
	if err != nil {
		t.Fatal(err)
	}
	for _, sess := range sessions {
		r, err := projection.Verify(ctx, s, sess.ID)
		if err != nil {
			t.Fatalf("verify %s: %v", sess.ID, err)
		}
		for _, d := range r.Differences {
			t.Errorf("%s: %s", sess.ID, d)
		}
		evs, err := s.Events(ctx, sess.ID, persistence.EventFilter{})
		if err != nil {
			t.Fatal(err)
		}
		kinds := map[persistence.EventKind]int{}
		for _, e := range evs {
			kinds[e.Kind]++
		}
		// A fork starts from a copy (session_imported): until it is used
		// it has no frames, and its compactions' lifecycle events stay in
		// the source's stream.
		copied := kinds[persistence.EventSessionImported] > 0
		if r.Frames == 0 && !copied {
			t.Errorf("%s: no frames in its event log", sess.ID)
		}
		// Compactions leave their lifecycle events beside the projection.
		comps, err := s.Compactions(ctx, sess.ID)
		if err != nil {
			t.Fatal(err)
		}
		if len(comps) > 0 && !copied {
			if kinds[persistence.EventCompactionStarted] == 0 || kinds[persistence.EventCompactionCompleted] == 0 {
				t.Errorf("%s: %d compactions but lifecycle events %v", sess.ID, len(comps), kinds)
			}
		}
		t.Logf("%s: %d messages, %d events, %d frames", sess.ID, r.Messages, r.Events, r.Frames)
	}
}
