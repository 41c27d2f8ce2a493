package sqlcore

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/crow-acp/crow-acp/internal/persistence"
)

func isNotFound(err error) bool { return errors.Is(err, persistence.ErrNotFound) }

// CreateConnection records a connection.
func (s *Store) CreateConnection(ctx context.Context, c *persistence.Connection) error {
	if c == nil || c.ID == "" {
		return s.errorf("create connection", errors.New("empty id"))
	}
	started := s.orNow(c.StartedAt, s.now())
	at, err := s.d.Time(started)
	if err != nil {
		return s.errorf("create connection", err)
	}
	var stream int64
	err = s.write(ctx, func(tx conn) error {
		n, err := tx.Exec(ctx, `INSERT INTO connections (id, pid, host, started_at) VALUES (?, ?, ?, ?)
			ON CONFLICT (id) DO NOTHING`, c.ID, c.PID, s.d.Text(c.Host), at)
		if err == nil && n == 0 {
			err = persistence.ErrConflict
		}
		if err == nil {
			stream, err = s.streamNumber(ctx, tx, c.ID)
		}
		return err
	})
	if errors.Is(err, persistence.ErrConflict) {
		return s.errorf(fmt.Sprintf("create connection %q", c.ID), err)
	}
	if err != nil {
		return s.errorf("create connection", err)
	}
	s.connectionStreams.Store(c.ID, stream) // committed
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
			return s.errorf("append events", fmt.Errorf("event %d: stream and kind are required", i))
		}
	}
	t := s.now()
	packed := persistence.PackEvents(evs) // before the write: no lock held while compressing
	var filled []EventRow
	err := s.write(ctx, func(tx conn) error {
		var err error
		filled, err = s.appendEventsTx(ctx, tx, packed, t)
		return err
	})
	if err != nil {
		return s.errorf("append events", err)
	}
	for i, f := range filled {
		evs[i].ID, evs[i].Seq, evs[i].At = f.ID, f.Seq, f.At
	}
	return nil
}

// appendEventsTx inserts evs inside tx and returns what it assigned; the
// caller copies it into evs only after the commit, so a rollback leaves evs
// untouched.
func (s *Store) appendEventsTx(ctx context.Context, tx conn, evs []*persistence.Event, t time.Time) ([]EventRow, error) {
	// Reserve the seqs of each stream with one statement per stream.
	type reservation struct{ id, n, next, turn int64 }
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
			INSERT INTO event_streams (stream, last_seq, last_turn) VALUES (?, ?, ?)
			ON CONFLICT (stream) DO UPDATE SET
				last_seq = event_streams.last_seq + excluded.last_seq,
				last_turn = {greatest}(event_streams.last_turn, excluded.last_turn)
			RETURNING id, last_seq`, stream, r.n, r.turn).Scan(&r.id, &last); err != nil {
			return nil, err
		}
		r.next = last - r.n + 1
	}
	// A connection is named by its stream's number too.
	connections := make(map[string]int64)
	for _, e := range evs {
		c := e.ConnectionID
		if _, ok := connections[c]; ok || c == "" {
			continue
		}
		if r := streams[c]; r != nil {
			connections[c] = r.id
			continue
		}
		if id, ok := s.connectionStreams.Load(c); ok {
			connections[c] = id.(int64)
			continue
		}
		id, err := s.streamNumber(ctx, tx, c)
		if err != nil {
			return nil, err
		}
		connections[c] = id
	}
	out := make([]EventRow, len(evs))
	for i, e := range evs {
		at := s.orNow(e.At, t)
		if s.d.CheckTime != nil {
			if err := s.d.CheckTime(at); err != nil {
				return nil, fmt.Errorf("event %d: %w", i, err)
			}
		}
		r := streams[e.Stream]
		out[i] = EventRow{Seq: r.next, At: at, StreamID: r.id, ConnectionStreamID: connections[e.ConnectionID]}
		r.next++
	}
	if err := s.d.InsertEvents(ctx, tx.c, evs, out); err != nil {
		return nil, err
	}
	return out, nil
}

// project appends, inside tx, the pending events of the write's origin
// (streamed runs packed: persistence.PackEvents) and then one event of
// kind per record of a change to the messages or compactions tables
// (their JSON), attributed to the origin.
func (s *Store) project(ctx context.Context, tx conn, sessionID string, kind persistence.EventKind, t time.Time, records ...any) error {
	evs := persistence.PackEvents(s.origin.Pending)
	for _, r := range records {
		b, err := json.Marshal(r)
		if err != nil {
			return fmt.Errorf("encode %s event: %w", kind, err)
		}
		evs = append(evs, &persistence.Event{Stream: sessionID, ConnectionID: s.origin.ConnectionID, Turn: s.origin.Turn,
			At: t, Kind: kind, Body: b})
	}
	if len(evs) == 0 {
		return nil
	}
	_, err := s.appendEventsTx(ctx, tx, evs, t)
	return err
}

// streamNumber is the number of stream in event_streams, which it is
// given (with no events yet) if it has none: a connection's, named by
// events of other streams before its own may have any. Not cached: the
// transaction may yet roll the new row back, and its number be given to
// another stream.
func (s *Store) streamNumber(ctx context.Context, tx conn, stream string) (int64, error) {
	var id int64
	err := tx.QueryRow(ctx, `SELECT id FROM event_streams WHERE stream = ?`, stream).Scan(&id)
	if !s.d.IsNoRows(err) {
		return id, err
	}
	if _, err := tx.Exec(ctx, `INSERT INTO event_streams (stream) VALUES (?) ON CONFLICT (stream) DO NOTHING`, stream); err != nil {
		return 0, err
	}
	err = tx.QueryRow(ctx, `SELECT id FROM event_streams WHERE stream = ?`, stream).Scan(&id)
	return id, err
}

// priorText reads, inside tx, the text a message holds before an update
// rewrites it (none if there is no such message): its message_updated event
// records only what the update appends to it (persistence.UpdateRecord).
// Parts are set when the parts column holds the content marker
// (contentParts): they are the old content's, which an update of the
// content must then store as JSON.
func (s *Store) priorText(ctx context.Context, tx conn, sessionID string, id int64) (persistence.Message, error) {
	var (
		p     persistence.Message
		parts sql.NullString
	)
	err := tx.QueryRow(ctx, `SELECT content, reasoning, parts FROM messages WHERE id = ? AND session_id = ?`, id, sessionID).
		Scan(&p.Content, &p.Reasoning, &parts)
	if s.d.IsNoRows(err) {
		return p, nil
	}
	if err != nil {
		return p, err
	}
	p.ID = id
	if parts.String == contentParts {
		p.Parts, err = readParts(parts, p.Content)
	}
	return p, err
}

// EventsQuery reads a stream's events after a seq. The stream's number is
// looked up once; the connections' names by their numbers, the primary key.
const EventsQuery = `SELECT e.id, e.seq, COALESCE(c.stream, ''), e.at, e.direction, e.turn, e.kind, e.method, e.body
	FROM events e LEFT JOIN event_streams c ON c.id = e.connection_stream_id
	WHERE e.stream_id = (SELECT id FROM event_streams WHERE stream = ?) AND e.seq > ? ORDER BY e.seq`

// Events returns a stream's events in seq order.
func (s *Store) Events(ctx context.Context, stream string, f persistence.EventFilter) ([]persistence.Event, error) {
	q := EventsQuery
	args := []any{stream, f.AfterSeq}
	if f.Limit > 0 {
		q += ` LIMIT ?`
		args = append(args, f.Limit)
	}
	rows, err := s.read().Query(ctx, q, args...)
	out, err := collect(rows, err, func(r Row) (persistence.Event, error) {
		var (
			e         persistence.Event
			dir, kind string
			body      []byte
		)
		if err := r.Scan(&e.ID, &e.Seq, &e.ConnectionID, s.d.ScanTime(&e.At), &dir, &e.Turn, &kind, &e.Method, &body); err != nil {
			return e, err
		}
		e.Stream, e.At = stream, e.At.UTC()
		e.Direction, e.Kind = persistence.Direction(dir), persistence.EventKind(kind)
		e.Body = append([]byte{}, body...)
		return e, nil
	})
	if err != nil {
		return nil, s.errorf("events", err)
	}
	return out, nil
}

// LastTurn is the highest turn recorded on stream.
func (s *Store) LastTurn(ctx context.Context, stream string) (int64, error) {
	var turn int64
	err := s.read().QueryRow(ctx, `SELECT last_turn FROM event_streams WHERE stream = ?`, stream).Scan(&turn)
	if s.d.IsNoRows(err) {
		return 0, nil
	}
	if err != nil {
		return 0, s.errorf("last turn", err)
	}
	return turn, nil
}

// PruneEvents deletes frame events recorded before t.
func (s *Store) PruneEvents(ctx context.Context, before time.Time) (int64, error) {
	cut, err := s.d.Time(before)
	if err != nil {
		return 0, s.errorf("prune events", err)
	}
	var n int64
	err = s.write(ctx, func(tx conn) error {
		n, err = tx.Exec(ctx, `DELETE FROM events WHERE direction <> '' AND at < ?`, cut)
		return err
	})
	if err != nil {
		return 0, s.errorf("prune events", err)
	}
	return n, nil
}
