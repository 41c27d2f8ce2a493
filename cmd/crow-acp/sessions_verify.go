package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/crow-acp/crow-acp/internal/termsafe"
	"github.com/crow-acp/crow-acp/persistence"
	"github.com/crow-acp/crow-acp/persistence/projection"
)

// sessionsVerify rebuilds a session's messages and compactions from its
// event log and compares them with the live tables.
func sessionsVerify(ctx context.Context, e *env, args []string) error {
	store, id, err := oneSession(ctx, "verify", "Usage: crow-acp sessions verify ID\n\nRebuilds a session's messages from its event log and reports every\ndifference from the messages table. Exits 1 if there is any.\n", args, e, nil)
	if err != nil {
		return err
	}
	defer store.Close()
	if err := findSession(ctx, store, id); err != nil {
		return err
	}
	r, err := projection.Verify(ctx, store, id)
	if err != nil {
		return fmt.Errorf("verify %s: %w", id, err)
	}
	if r.OK() {
		fmt.Fprintf(e.std.out, "%s: ok: %d messages rebuilt from %d events (%d frames)\n", termsafe.Line(id), r.Messages, r.Events, r.Frames)
		if r.Pruned > 0 {
			fmt.Fprintf(e.std.out, "%s: %d of them streamed text whose frames were pruned: their text is not compared\n", termsafe.Line(id), r.Pruned)
		}
		return nil
	}
	for _, d := range r.Differences {
		fmt.Fprintf(e.std.out, "%s: %s\n", termsafe.Line(id), termsafe.Line(fmt.Sprint(d)))
	}
	return fmt.Errorf("%s: %d differences between the messages table and the event log", id, len(r.Differences))
}

// sessionsRebuild prints the messages rebuilt from a session's event log.
func sessionsRebuild(ctx context.Context, e *env, args []string) error {
	store, id, err := oneSession(ctx, "rebuild", "Usage: crow-acp sessions rebuild ID\n\nPrints the messages rebuilt from a session's event log, one JSON object\nper line (the live tables are not changed).\n", args, e, nil)
	if err != nil {
		return err
	}
	defer store.Close()
	if err := findSession(ctx, store, id); err != nil {
		return err
	}
	st, _, err := projection.Load(ctx, store, id)
	if err != nil {
		return err
	}
	// Stored model text: the exact value, with what a terminal would act
	// on written as \u escapes.
	var line bytes.Buffer
	enc := json.NewEncoder(&line)
	for _, m := range st.Messages {
		if st.Pruned[m.ID] {
			fmt.Fprintf(e.std.err, "message seq %d: its streamed text was pruned with its frames (the messages table has it)\n", m.Seq)
		}
		line.Reset()
		if err := enc.Encode(persistence.RecordOf(&m)); err != nil {
			return err
		}
		if _, err := e.std.out.Write(termsafe.JSON(line.Bytes())); err != nil {
			return err
		}
	}
	return nil
}

// sessionReader is what exec --session and sessions show, export, delete,
// verify and rebuild read of a store (declared by its consumer, not the
// whole persistence.Store; persistence.Dump reads the same three methods).
type sessionReader interface {
	GetSession(ctx context.Context, id string) (*persistence.Session, error)
	Messages(ctx context.Context, sessionID string, f persistence.MessageFilter) ([]persistence.Message, error)
	Compactions(ctx context.Context, sessionID string) ([]persistence.Compaction, error)
}

func findSession(ctx context.Context, store sessionReader, id string) error {
	_, err := store.GetSession(ctx, id)
	if errors.Is(err, persistence.ErrNotFound) {
		return &notFoundError{id: id}
	}
	return err
}
