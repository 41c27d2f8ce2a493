package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/crow-acp/crow-acp/persistence"
	"github.com/crow-acp/crow-acp/persistence/internal/jsoncol"
)

// classify wraps the storage faults a user must hear about in the domain's
// sentinels, keeping the driver's error in the chain.
func classify(err error) error {
	var pe *pgconn.PgError
	if err == nil || !errors.As(err, &pe) {
		return err
	}
	switch pe.Code {
	case "53100": // disk_full
		return fmt.Errorf("%w: %w", persistence.ErrStorageFull, err)
	case "25006": // read_only_sql_transaction (a hot standby, default_transaction_read_only)
		return fmt.Errorf("%w: %w", persistence.ErrStorageReadOnly, err)
	}
	return err
}

// CreateConnection records a connection.
func (s *Store) CreateConnection(ctx context.Context, c *persistence.Connection) error {
	if c == nil || c.ID == "" {
		return errors.New("postgres: create connection: empty id")
	}
	started := stored(c.StartedAt)
	if c.StartedAt.IsZero() {
		started = now()
	}
	err := s.write(ctx, func(tx pgx.Tx) error {
		_, err := tx.Exec(ctx, `INSERT INTO connections (id, pid, host, started_at) VALUES ($1, $2, $3, $4)`,
			c.ID, c.PID, c.Host, started)
		return err
	})
	if isUniqueViolation(err) {
		return fmt.Errorf("postgres: create connection %q: %w", c.ID, persistence.ErrConflict)
	}
	if err != nil {
		return fmt.Errorf("postgres: create connection: %w", classify(err))
	}
	c.StartedAt = started
	return nil
}

// AppendEvents commits evs atomically, in order.
func (s *Store) AppendEvents(ctx context.Context, evs ...*persistence.Event) error {
	if len(evs) == 0 {
		return nil
	}
	for i, e := range evs {
		if e == nil || e.Stream == "" || e.Kind == "" {
			return fmt.Errorf("postgres: append events: event %d: stream and kind are required", i)
		}
	}
	t := now()
	var filled []eventFill
	err := s.write(ctx, func(tx pgx.Tx) error {
		var err error
		filled, err = appendEventsTx(ctx, tx, evs, t)
		return err
	})
	if err != nil {
		return fmt.Errorf("postgres: append events: %w", classify(err))
	}
	for i, f := range filled {
		evs[i].ID, evs[i].Seq, evs[i].At = f.id, f.seq, f.at
	}
	return nil
}

type eventFill struct {
	id, seq int64
	at      time.Time
}

// appendEventsTx inserts evs inside tx and returns what it assigned.
func appendEventsTx(ctx context.Context, tx pgx.Tx, evs []*persistence.Event, t time.Time) ([]eventFill, error) {
	type reservation struct{ n, next, turn int64 }
	streams := make(map[string]*reservation)
	var order []string
	for _, e := range evs {
		r := streams[e.Stream]
		if r == nil {
			r = &reservation{}
			streams[e.Stream] = r
			order = append(order, e.Stream)
		}
		r.n++
		r.turn = max(r.turn, e.Turn)
	}
	for _, stream := range order {
		r := streams[stream]
		var last int64
		if err := tx.QueryRow(ctx, `
			INSERT INTO event_streams (stream, last_seq, last_turn) VALUES ($1, $2, $3)
			ON CONFLICT (stream) DO UPDATE SET
				last_seq = event_streams.last_seq + excluded.last_seq,
				last_turn = GREATEST(event_streams.last_turn, excluded.last_turn)
			RETURNING last_seq`, stream, r.n, r.turn).Scan(&last); err != nil {
			return nil, err
		}
		r.next = last - r.n + 1
	}
	b := &pgx.Batch{}
	out := make([]eventFill, len(evs))
	for i, e := range evs {
		at := stored(e.At)
		if e.At.IsZero() {
			at = t
		}
		r := streams[e.Stream]
		out[i] = eventFill{seq: r.next, at: at}
		r.next++
		body := e.Body
		if body == nil {
			body = []byte{}
		}
		b.Queue(`INSERT INTO events (stream, seq, connection_id, at, direction, turn, kind, method, body)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9) RETURNING id`,
			e.Stream, out[i].seq, e.ConnectionID, at, string(e.Direction), e.Turn, string(e.Kind), e.Method, body)
	}
	res := tx.SendBatch(ctx, b)
	for i := range evs {
		if err := res.QueryRow().Scan(&out[i].id); err != nil {
			res.Close()
			return nil, fmt.Errorf("event %d: %w", i, err)
		}
	}
	return out, res.Close()
}

// projectionTx appends, inside tx, the pending events the context carries
// and then evs: the events of one projection change.
func projectionTx(ctx context.Context, tx pgx.Tx, evs []*persistence.Event, t time.Time) error {
	if pending := persistence.EventSourceFrom(ctx).Pending; len(pending) > 0 {
		evs = append(append([]*persistence.Event(nil), pending...), evs...)
	}
	if len(evs) == 0 {
		return nil
	}
	_, err := appendEventsTx(ctx, tx, evs, t)
	return err
}

// projectionEvent builds the event the store records beside a change to the
// messages or compactions tables.
func projectionEvent(ctx context.Context, sessionID string, kind persistence.EventKind, body any, at time.Time) (*persistence.Event, error) {
	b, err := json.Marshal(body)
	if err != nil {
		return nil, fmt.Errorf("encode %s event: %w", kind, err)
	}
	src := persistence.EventSourceFrom(ctx)
	return &persistence.Event{Stream: sessionID, ConnectionID: src.ConnectionID, Turn: src.Turn, At: at, Kind: kind, Body: b}, nil
}

// Events returns a stream's events in seq order.
func (s *Store) Events(ctx context.Context, stream string, f persistence.EventFilter) ([]persistence.Event, error) {
	q := `SELECT id, seq, connection_id, at, direction, turn, kind, method, body
		FROM events WHERE stream = $1 AND seq > $2 ORDER BY seq`
	args := []any{stream, f.AfterSeq}
	if f.Limit > 0 {
		q += ` LIMIT $3`
		args = append(args, f.Limit)
	}
	rows, err := s.pool.Query(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("postgres: events: %w", err)
	}
	defer rows.Close()
	var out []persistence.Event
	for rows.Next() {
		var e persistence.Event
		var dir, kind string
		if err := rows.Scan(&e.ID, &e.Seq, &e.ConnectionID, &e.At, &dir, &e.Turn, &kind, &e.Method, &e.Body); err != nil {
			return nil, fmt.Errorf("postgres: events: %w", err)
		}
		e.Stream, e.At = stream, e.At.UTC()
		e.Direction, e.Kind = persistence.Direction(dir), persistence.EventKind(kind)
		if e.Body == nil {
			e.Body = []byte{}
		}
		out = append(out, e)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("postgres: events: %w", err)
	}
	return out, nil
}

// LastTurn is the highest turn recorded on stream.
func (s *Store) LastTurn(ctx context.Context, stream string) (int64, error) {
	var turn int64
	err := s.pool.QueryRow(ctx, `SELECT last_turn FROM event_streams WHERE stream = $1`, stream).Scan(&turn)
	if errors.Is(err, pgx.ErrNoRows) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("postgres: last turn: %w", err)
	}
	return turn, nil
}

// PruneEvents deletes frame events recorded before t.
func (s *Store) PruneEvents(ctx context.Context, before time.Time) (int64, error) {
	var n int64
	err := s.write(ctx, func(tx pgx.Tx) error {
		tag, err := tx.Exec(ctx, `DELETE FROM events WHERE direction <> '' AND at < $1`, before)
		n = tag.RowsAffected()
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("postgres: prune events: %w", classify(err))
	}
	return n, nil
}

// UpdateMessage rewrites a message's mutable fields and records the change.
func (s *Store) UpdateMessage(ctx context.Context, m *persistence.Message) error {
	if err := s.updateMessage(ctx, m); err != nil {
		return fmt.Errorf("postgres: update message: %w", classify(err))
	}
	return nil
}

func (s *Store) updateMessage(ctx context.Context, m *persistence.Message) error {
	if m == nil || m.ID == 0 || m.SessionID == "" {
		return errors.New("message id and session id are required")
	}
	toolCalls, err := jsoncol.Slice("tool calls", m.ToolCalls)
	if err != nil {
		return err
	}
	meta, err := rawJSON("meta", m.Meta)
	if err != nil {
		return err
	}
	t := now()
	return s.write(ctx, func(tx pgx.Tx) error {
		// Lock the session row first, like every other writer of it.
		if _, err := bumpSession(ctx, tx, m.SessionID, 0, t); err != nil {
			if errors.Is(err, persistence.ErrNotFound) {
				return fmt.Errorf("message %d of session %q: %w", m.ID, m.SessionID, persistence.ErrNotFound)
			}
			return err
		}
		rows, err := tx.Query(ctx, `
			UPDATE messages SET content = $1, reasoning = $2, tool_calls = $3, status = $4, meta = $5, token_count = $6
			WHERE id = $7 AND session_id = $8
			RETURNING `+messageColumns, m.Content, m.Reasoning, toolCalls, string(m.Status), meta, m.TokenCount,
			m.ID, m.SessionID)
		if err != nil {
			return err
		}
		msgs, err := scanMessages(rows, m.SessionID)
		if err != nil {
			return err
		}
		if len(msgs) == 0 {
			return fmt.Errorf("message %d of session %q: %w", m.ID, m.SessionID, persistence.ErrNotFound)
		}
		ev, err := projectionEvent(ctx, m.SessionID, persistence.EventMessageUpdated, persistence.RecordOf(&msgs[0]), t)
		if err != nil {
			return err
		}
		return projectionTx(ctx, tx, []*persistence.Event{ev}, t)
	})
}

// InterruptStreaming marks the session's streaming messages interrupted.
func (s *Store) InterruptStreaming(ctx context.Context, sessionID string) (int, error) {
	t := now()
	n := 0
	err := s.write(ctx, func(tx pgx.Tx) error {
		rows, err := tx.Query(ctx, `
			UPDATE messages SET status = $1 WHERE session_id = $2 AND status = $3
			RETURNING `+messageColumns, string(persistence.StatusInterrupted), sessionID, string(persistence.StatusStreaming))
		if err != nil {
			return err
		}
		msgs, err := scanMessages(rows, sessionID)
		if err != nil {
			return err
		}
		n = len(msgs)
		evs := make([]*persistence.Event, len(msgs))
		for i := range msgs {
			if evs[i], err = projectionEvent(ctx, sessionID, persistence.EventMessageUpdated, persistence.RecordOf(&msgs[i]), t); err != nil {
				return err
			}
		}
		return projectionTx(ctx, tx, evs, t)
	})
	if err != nil {
		return 0, fmt.Errorf("postgres: interrupt streaming: %w", classify(err))
	}
	return n, nil
}

// recordChange records, inside tx, the state after a compaction operation of
// the messages msgIDs (deleted: ids it removed) and of compaction compID
// (compDeleted: removed).
func recordChange(ctx context.Context, tx pgx.Tx, sessionID string, msgIDs, deleted []int64, compID int64, compDeleted bool, t time.Time) error {
	rec := persistence.ChangeRecord{DeletedMessages: deleted}
	gone := make(map[int64]bool, len(deleted))
	for _, id := range deleted {
		gone[id] = true
	}
	var live []int64
	for _, id := range msgIDs {
		if !gone[id] {
			live = append(live, id)
		}
	}
	if len(live) > 0 {
		rows, err := tx.Query(ctx, `SELECT `+messageColumns+` FROM messages
			WHERE session_id = $1 AND id = ANY($2) ORDER BY seq`, sessionID, live)
		if err != nil {
			return err
		}
		msgs, err := scanMessages(rows, sessionID)
		if err != nil {
			return err
		}
		for i := range msgs {
			rec.Messages = append(rec.Messages, persistence.RecordOf(&msgs[i]))
		}
	}
	if compDeleted {
		rec.DeletedCompaction = compID
	} else if compID != 0 {
		c, err := getCompaction(ctx, tx, sessionID, compID, false)
		if err != nil {
			return err
		}
		rec.Compaction = c
	}
	ev, err := projectionEvent(ctx, sessionID, persistence.EventMessagesChanged, rec, t)
	if err != nil {
		return err
	}
	return projectionTx(ctx, tx, []*persistence.Event{ev}, t)
}
