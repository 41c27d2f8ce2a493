package main

import (
	"context"
	"testing"

	"github.com/crow-acp/crow-acp/persistence"
	"github.com/crow-acp/crow-acp/persistence/backend"
)

// storedMessages opens the database db (a SQLite path or a PostgreSQL URL)
// after the agent has exited and returns every stored message of session
// sid.
func storedMessages(t *testing.T, db, sid string) []persistence.Message {
	t.Helper()
	var msgs []persistence.Message
	withStore(t, db, func(s persistence.Store) (err error) {
		msgs, err = s.Messages(context.Background(), sid, persistence.MessageFilter{})
		return err
	})
	return msgs
}

// storedEvents is storedMessages for the session's event log.
func storedEvents(t *testing.T, db, sid string) []persistence.Event {
	t.Helper()
	var evs []persistence.Event
	withStore(t, db, func(s persistence.Store) (err error) {
		evs, err = s.Events(context.Background(), sid, persistence.EventFilter{})
		return err
	})
	return evs
}

func withStore(t *testing.T, db string, read func(persistence.Store) error) {
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
