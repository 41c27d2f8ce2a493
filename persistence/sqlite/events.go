package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"math/bits"
	"time"

	"github.com/mattn/go-sqlite3"

	"github.com/crow-acp/crow-acp/persistence"
	"github.com/crow-acp/crow-acp/persistence/internal/jsoncol"
)

// classify wraps the storage faults a user must hear about in the domain's
// sentinels, keeping the driver's error in the chain.
func classify(err error) error {
	var se sqlite3.Error
	if err == nil || !errors.As(err, &se) {
		return err
	}
	switch se.Code {
	case sqlite3.ErrFull:
		return fmt.Errorf("%w: %w", persistence.ErrStorageFull, err)
	case sqlite3.ErrReadonly:
		return fmt.Errorf("%w: %w", persistence.ErrStorageReadOnly, err)
	}
	return err
}

// CreateConnection records a connection.
func (s *Store) CreateConnection(ctx context.Context, c *persistence.Connection) error {
	if c == nil || c.ID == "" {
		return errors.New("sqlite: create connection: empty id")
	}
	started := c.StartedAt
	if started.IsZero() {
		started = now()
	}
	at, err := nanos(started)
	if err != nil {
		return fmt.Errorf("sqlite: create connection: %w", err)
	}
	err = s.write(ctx, func(tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, `INSERT INTO connections (id, pid, host, started_at) VALUES (?, ?, ?, ?)`,
			c.ID, c.PID, c.Host, at)
		return err
	})
	if isUniqueViolation(err) {
		return fmt.Errorf("sqlite: create connection %q: %w", c.ID, persistence.ErrConflict)
	}
	if err != nil {
		return fmt.Errorf("sqlite: create connection: %w", err)
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
			return fmt.Errorf("sqlite: append events: event %d: stream and kind are required", i)
		}
	}
	t := now()
	var filled []eventFill
	err := s.write(ctx, func(tx *sql.Tx) error {
		var err error
		filled, err = appendEventsTx(ctx, tx, evs, t)
		return err
	})
	if err != nil {
		return fmt.Errorf("sqlite: append events: %w", err)
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

// Events are inserted in chunks: runs of consecutive events that agree on
// the six columns a frame shares with its neighbours (a turn's streamed
// updates all do), cut into lengths that are powers of two up to 64. One
// multi-row INSERT costs far less than as many single-row ones (one step,
// one AUTOINCREMENT update, one trip through database/sql), and binding the
// shared columns once per chunk (?1 to ?6, which every row repeats) saves
// two thirds of the per-row binds. The seven texts are constants, so no
// value can reach the SQL, and stay prepared in the statement cache.
const (
	insertEvent = `INSERT INTO events (stream, connection_id, direction, turn, kind, method, seq, at, body) VALUES `
	sharedArgs  = 6
	// Every row names the shared ?1 to ?6, and its bare ?s take the numbers
	// after the largest so far: 7 to 9 in the first row, 10 to 12 in the
	// second, and so on.
	eventRow    = `(?1, ?2, ?3, ?4, ?5, ?6, ?, ?, ?)`
	eventRows2  = eventRow + `, ` + eventRow
	eventRows4  = eventRows2 + `, ` + eventRows2
	eventRows8  = eventRows4 + `, ` + eventRows4
	eventRows16 = eventRows8 + `, ` + eventRows8
	eventRows32 = eventRows16 + `, ` + eventRows16
	eventRows64 = eventRows32 + `, ` + eventRows32
	maxChunk    = 64
)

// sameShared reports whether a and b agree on the columns a chunk binds once.
func sameShared(a, b *persistence.Event) bool {
	return a.Stream == b.Stream && a.ConnectionID == b.ConnectionID && a.Direction == b.Direction &&
		a.Turn == b.Turn && a.Kind == b.Kind && a.Method == b.Method
}

// appendEventsTx inserts evs inside tx and returns what it assigned; the
// caller copies it into evs only after the commit, so a rollback leaves evs
// untouched.
func appendEventsTx(ctx context.Context, tx *sql.Tx, evs []*persistence.Event, t time.Time) ([]eventFill, error) {
	// Reserve the seqs of each stream with one statement per stream.
	type reservation struct {
		n, next int64
		turn    int64
	}
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
		if err := tx.QueryRowContext(ctx, `
			INSERT INTO event_streams (stream, last_seq, last_turn) VALUES (?, ?, ?)
			ON CONFLICT (stream) DO UPDATE SET
				last_seq = last_seq + excluded.last_seq,
				last_turn = MAX(last_turn, excluded.last_turn)
			RETURNING last_seq`, stream, r.n, r.turn).Scan(&last); err != nil {
			return nil, err
		}
		r.next = last - r.n + 1
	}

	out := make([]eventFill, len(evs))
	for i, e := range evs {
		at := e.At
		if at.IsZero() {
			at = t
		}
		if _, err := nanos(at); err != nil { // in range: UnixNano below is exact
			return nil, fmt.Errorf("event %d: %w", i, err)
		}
		r := streams[e.Stream]
		out[i] = eventFill{seq: r.next, at: at}
		r.next++
	}

	args := make([]any, 0, sharedArgs+3*min(len(evs), maxChunk))
	for i := 0; i < len(evs); {
		run := 1
		for run < maxChunk && i+run < len(evs) && sameShared(evs[i], evs[i+run]) {
			run++
		}
		n := 1 << (bits.Len(uint(run)) - 1) // the largest power of two that fits
		var q string
		switch n {
		case 64:
			q = insertEvent + eventRows64
		case 32:
			q = insertEvent + eventRows32
		case 16:
			q = insertEvent + eventRows16
		case 8:
			q = insertEvent + eventRows8
		case 4:
			q = insertEvent + eventRows4
		case 2:
			q = insertEvent + eventRows2
		default:
			q = insertEvent + eventRow
		}
		e := evs[i]
		args = append(args[:0], e.Stream, e.ConnectionID, string(e.Direction), e.Turn, string(e.Kind), e.Method)
		for j := i; j < i+n; j++ {
			body := evs[j].Body
			if body == nil {
				body = []byte{}
			}
			args = append(args, out[j].seq, out[j].at.UnixNano(), body)
		}
		res, err := tx.ExecContext(ctx, q, args...)
		if err != nil {
			return nil, fmt.Errorf("events %d to %d: %w", i, i+n-1, err)
		}
		// One statement inserts its rows in VALUES order, and AUTOINCREMENT
		// gives each row one more than the largest id ever used (events has
		// no insert triggers, and we hold the write lock), so the chunk's
		// ids are the n ids ending at the last one inserted.
		last, err := res.LastInsertId()
		if err != nil {
			return nil, err
		}
		if got, err := res.RowsAffected(); err != nil || got != int64(n) { // q and n disagree
			return nil, fmt.Errorf("events %d to %d: %d rows inserted (%v)", i, i+n-1, got, err)
		}
		for j := range n {
			out[i+j].id = last - int64(n-1-j)
		}
		i += n
	}
	return out, nil
}

// projectionTx appends, inside tx, the pending events the context carries
// and then evs: the events of one projection change.
func projectionTx(ctx context.Context, tx *sql.Tx, evs []*persistence.Event, t time.Time) error {
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
	return &persistence.Event{
		Stream: sessionID, ConnectionID: src.ConnectionID, Turn: src.Turn,
		At: at, Kind: kind, Body: b,
	}, nil
}

// Events returns a stream's events in seq order.
func (s *Store) Events(ctx context.Context, stream string, f persistence.EventFilter) ([]persistence.Event, error) {
	q := `SELECT id, seq, connection_id, at, direction, turn, kind, method, body
		FROM events WHERE stream = ? AND seq > ? ORDER BY seq`
	args := []any{stream, f.AfterSeq}
	if f.Limit > 0 {
		q += ` LIMIT ?`
		args = append(args, f.Limit)
	}
	rows, err := s.rdb.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("sqlite: events: %w", err)
	}
	defer rows.Close()
	var out []persistence.Event
	for rows.Next() {
		var (
			e         persistence.Event
			at        int64
			dir, kind string
			body      []byte
		)
		if err := rows.Scan(&e.ID, &e.Seq, &e.ConnectionID, &at, &dir, &e.Turn, &kind, &e.Method, &body); err != nil {
			return nil, fmt.Errorf("sqlite: events: %w", err)
		}
		e.Stream, e.At = stream, fromNanos(at)
		e.Direction, e.Kind = persistence.Direction(dir), persistence.EventKind(kind)
		e.Body = append([]byte{}, body...)
		out = append(out, e)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("sqlite: events: %w", err)
	}
	return out, nil
}

// LastTurn is the highest turn recorded on stream.
func (s *Store) LastTurn(ctx context.Context, stream string) (int64, error) {
	var turn int64
	err := s.rdb.QueryRowContext(ctx, `SELECT last_turn FROM event_streams WHERE stream = ?`, stream).Scan(&turn)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("sqlite: last turn: %w", err)
	}
	return turn, nil
}

// PruneEvents deletes frame events recorded before t.
func (s *Store) PruneEvents(ctx context.Context, before time.Time) (int64, error) {
	cut, err := nanos(before)
	if err != nil {
		return 0, fmt.Errorf("sqlite: prune events: %w", err)
	}
	var n int64
	err = s.write(ctx, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, `DELETE FROM events WHERE direction <> '' AND at < ?`, cut)
		if err != nil {
			return err
		}
		n, err = res.RowsAffected()
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("sqlite: prune events: %w", err)
	}
	return n, nil
}

// UpdateMessage rewrites a message's mutable fields and records the change.
func (s *Store) UpdateMessage(ctx context.Context, m *persistence.Message) error {
	if err := s.updateMessage(ctx, m); err != nil {
		return fmt.Errorf("sqlite: update message: %w", err)
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
	at, err := nanos(t)
	if err != nil {
		return err
	}
	return s.write(ctx, func(tx *sql.Tx) error {
		row := tx.QueryRowContext(ctx, `
			UPDATE messages SET content = ?, reasoning = ?, tool_calls = ?, status = ?, meta = ?, token_count = ?
			WHERE id = ? AND session_id = ?
			RETURNING `+messageColumns, m.Content, m.Reasoning, toolCalls, string(m.Status), meta, m.TokenCount,
			m.ID, m.SessionID)
		stored, err := scanMessage(row, m.SessionID)
		if errors.Is(err, sql.ErrNoRows) {
			return fmt.Errorf("message %d of session %q: %w", m.ID, m.SessionID, persistence.ErrNotFound)
		}
		if err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, `UPDATE sessions SET updated_at = MAX(updated_at + 1, ?) WHERE id = ?`, at, m.SessionID); err != nil {
			return err
		}
		ev, err := projectionEvent(ctx, m.SessionID, persistence.EventMessageUpdated, persistence.RecordOf(&stored), t)
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
	err := s.write(ctx, func(tx *sql.Tx) error {
		rows, err := tx.QueryContext(ctx, `
			UPDATE messages SET status = ? WHERE session_id = ? AND status = ?
			RETURNING `+messageColumns, string(persistence.StatusInterrupted), sessionID, string(persistence.StatusStreaming))
		if err != nil {
			return err
		}
		var evs []*persistence.Event
		for rows.Next() {
			m, err := scanMessage(rows, sessionID)
			if err != nil {
				rows.Close()
				return err
			}
			ev, err := projectionEvent(ctx, sessionID, persistence.EventMessageUpdated, persistence.RecordOf(&m), t)
			if err != nil {
				rows.Close()
				return err
			}
			evs = append(evs, ev)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return err
		}
		n = len(evs)
		return projectionTx(ctx, tx, evs, t)
	})
	if err != nil {
		return 0, fmt.Errorf("sqlite: interrupt streaming: %w", err)
	}
	return n, nil
}

// recordChange records, inside tx, the state after a compaction operation of
// the messages msgIDs (deleted: ids it removed) and of compaction compID
// (compDeleted: removed).
func recordChange(ctx context.Context, tx *sql.Tx, sessionID string, msgIDs, deleted []int64, compID int64, compDeleted bool, t time.Time) error {
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
		ids, _ := json.Marshal(live)
		rows, err := tx.QueryContext(ctx, `SELECT `+messageColumns+` FROM messages
			WHERE session_id = ? AND id IN (SELECT value FROM json_each(?)) ORDER BY seq`, sessionID, string(ids))
		if err != nil {
			return err
		}
		for rows.Next() {
			m, err := scanMessage(rows, sessionID)
			if err != nil {
				rows.Close()
				return err
			}
			rec.Messages = append(rec.Messages, persistence.RecordOf(&m))
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return err
		}
	}
	if compDeleted {
		rec.DeletedCompaction = compID
	} else if compID != 0 {
		c, err := getCompaction(ctx, tx, sessionID, compID)
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
