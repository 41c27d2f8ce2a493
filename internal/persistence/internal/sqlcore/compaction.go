package sqlcore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/crow-acp/crow-acp/internal/persistence"
)

const compactionColumns = `id, policy, compacted_ids, kept_ids, tokens_before, tokens_after,
	summary_message_id, settings, created_at, added_ids, messages_before, messages_after, expanded`

func (s *Store) scanCompaction(row Row, sessionID string) (*persistence.Compaction, error) {
	var (
		c        persistence.Compaction
		settings []byte
	)
	if err := row.Scan(&c.ID, &c.Policy, s.d.ScanIDs(&c.CompactedIDs), s.d.ScanIDs(&c.KeptIDs), &c.TokensBefore,
		&c.TokensAfter, &c.SummaryMessageID, &settings, s.d.ScanTime(&c.CreatedAt), s.d.ScanIDs(&c.AddedIDs),
		&c.MessagesBefore, &c.MessagesAfter, &c.Expanded); err != nil {
		return nil, err
	}
	c.SessionID = sessionID
	if settings != nil {
		c.Settings = json.RawMessage(settings)
	}
	c.CreatedAt = c.CreatedAt.UTC()
	return &c, nil
}

// Compact appends added, stores c and marks c.CompactedIDs inactive, in one
// transaction.
func (s *Store) Compact(ctx context.Context, c *persistence.Compaction, added []*persistence.Message) error {
	return s.errorf("compact", s.compact(ctx, c, added))
}

func (s *Store) compact(ctx context.Context, c *persistence.Compaction, added []*persistence.Message) error {
	if c == nil {
		return errors.New("nil compaction")
	}
	t := s.now()
	at, err := s.d.Time(t)
	if err != nil {
		return err
	}
	createdAt := s.orNow(c.CreatedAt, t)
	created, err := s.d.Time(createdAt)
	if err != nil {
		return err
	}
	settings, err := s.rawJSON("settings", c.Settings)
	if err != nil {
		return err
	}
	rows, err := s.encodeMessages(c.SessionID, "added message", added, t)
	if err != nil {
		return err
	}
	distinct := distinctIDs(c.CompactedIDs)

	var compactionID int64
	var summaryID *int64
	var addedIDs []int64
	err = s.write(ctx, func(tx conn) error {
		last, err := s.bumpSession(ctx, tx, c.SessionID, len(rows), at)
		if err != nil {
			return err
		}
		if len(rows) > 0 {
			if addedIDs, err = s.insertNew(ctx, tx, c.SessionID, rows, last-int64(len(rows))+1); err != nil {
				return fmt.Errorf("added %w", err)
			}
			for i := range rows {
				if rows[i].M.Role == persistence.RoleSummary {
					id := addedIDs[i]
					summaryID = &id
					break
				}
			}
		}
		ins := *c
		ins.AddedIDs, ins.SummaryMessageID, ins.Expanded = addedIDs, summaryID, false
		if compactionID, err = s.insertCompaction(ctx, tx, &ins, created, settings); err != nil {
			return err
		}
		changed, err := s.setActive(ctx, tx, c.SessionID, distinct, false, &compactionID)
		if err != nil {
			return err
		}
		if changed != int64(len(distinct)) {
			return fmt.Errorf("%d of the compacted ids are not messages of session %q: %w",
				int64(len(distinct))-changed, c.SessionID, persistence.ErrNotFound)
		}
		return s.recordChange(ctx, tx, c.SessionID, addedIDs, c.CompactedIDs, nil, compactionID, false, t)
	})
	if err != nil {
		return err
	}
	c.ID, c.CreatedAt, c.SummaryMessageID, c.Expanded = compactionID, createdAt, summaryID, false
	c.AddedIDs = addedIDs
	fill(c.SessionID, rows, addedIDs)
	return nil
}

// insertCompaction inserts c, whose message ids are the stored ones, and
// returns its id.
func (s *Store) insertCompaction(ctx context.Context, tx conn, c *persistence.Compaction, created, settings any) (int64, error) {
	lists := [][]int64{c.CompactedIDs, c.KeptIDs, c.AddedIDs}
	var cols [3]any
	for i, name := range []string{"compacted ids", "kept ids", "added ids"} {
		var err error
		if cols[i], err = s.d.IDArray(name, lists[i]); err != nil {
			return 0, err
		}
	}
	var id int64
	err := tx.QueryRow(ctx, `
		INSERT INTO compactions (session_id, policy, compacted_ids, kept_ids,
			tokens_before, tokens_after, summary_message_id, settings, created_at,
			added_ids, messages_before, messages_after, expanded)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
		RETURNING id`,
		c.SessionID, c.Policy, cols[0], cols[1], c.TokensBefore, c.TokensAfter,
		c.SummaryMessageID, settings, created, cols[2], c.MessagesBefore, c.MessagesAfter, c.Expanded).Scan(&id)
	return id, err
}

// distinctIDs returns ids without duplicates, in first-seen order.
func distinctIDs(ids []int64) []int64 {
	seen := make(map[int64]struct{}, len(ids))
	out := make([]int64, 0, len(ids))
	for _, id := range ids {
		if _, dup := seen[id]; !dup {
			seen[id] = struct{}{}
			out = append(out, id)
		}
	}
	return out
}

// Compactions lists a session's compaction records, oldest first.
func (s *Store) Compactions(ctx context.Context, sessionID string) ([]persistence.Compaction, error) {
	list, err := s.compactions(ctx, sessionID)
	if err != nil {
		return nil, s.errorf("compactions", err)
	}
	return list, nil
}

func (s *Store) compactions(ctx context.Context, sessionID string) ([]persistence.Compaction, error) {
	rows, err := s.read().Query(ctx, `
		SELECT `+compactionColumns+`
		FROM compactions WHERE session_id = ? ORDER BY id`, sessionID)
	list, err := collect(rows, err, func(r Row) (persistence.Compaction, error) {
		c, err := s.scanCompaction(r, sessionID)
		if err != nil {
			return persistence.Compaction{}, err
		}
		return *c, nil
	})
	if err != nil {
		return nil, err
	}
	if len(list) == 0 {
		if err := s.requireSession(ctx, s.read(), sessionID); err != nil {
			return nil, err
		}
	}
	return list, nil
}

// Compaction returns one record of a session.
func (s *Store) Compaction(ctx context.Context, sessionID string, id int64) (*persistence.Compaction, error) {
	c, err := s.getCompaction(ctx, s.read(), sessionID, id)
	if err != nil {
		return nil, s.errorf("compaction", err)
	}
	return c, nil
}

func (s *Store) getCompaction(ctx context.Context, q conn, sessionID string, id int64) (*persistence.Compaction, error) {
	c, err := s.scanCompaction(q.QueryRow(ctx, `SELECT `+compactionColumns+` FROM compactions WHERE session_id = ? AND id = ?`, sessionID, id), sessionID)
	if s.d.IsNoRows(err) {
		return nil, fmt.Errorf("compaction %d of session %q: %w", id, sessionID, persistence.ErrNotFound)
	}
	return c, err
}

// lockedCompaction loads a record for an undo operation, after the
// session's row lock, so undo operations on one session run one at a time.
func (s *Store) lockedCompaction(ctx context.Context, tx conn, sessionID string, id int64) (*persistence.Compaction, error) {
	notFound := fmt.Errorf("compaction %d of session %q: %w", id, sessionID, persistence.ErrNotFound)
	if err := s.lockSession(ctx, tx, sessionID, notFound); err != nil {
		return nil, err
	}
	return s.getCompaction(ctx, tx, sessionID, id)
}

// countActive counts how many of ids are active messages of the session.
func (s *Store) countActive(ctx context.Context, tx conn, sessionID string, ids []int64) (int, error) {
	if len(ids) == 0 {
		return 0, nil
	}
	var n int
	err := tx.QueryRow(ctx, `SELECT COUNT(*) FROM messages WHERE session_id = ? AND {active} AND {in_ids}`,
		sessionID, s.d.IDs(ids)).Scan(&n)
	return n, err
}

// setActive sets is_active on ids; compacted_into_id is set to into when
// into is non-nil and left alone otherwise. It returns how many messages
// of the session it changed.
func (s *Store) setActive(ctx context.Context, tx conn, sessionID string, ids []int64, active bool, into *int64) (int64, error) {
	if len(ids) == 0 {
		return 0, nil
	}
	if into != nil {
		return tx.Exec(ctx, `UPDATE messages SET is_active = ?, compacted_into_id = ? WHERE session_id = ? AND {in_ids}`,
			active, *into, sessionID, s.d.IDs(ids))
	}
	return tx.Exec(ctx, `UPDATE messages SET is_active = ? WHERE session_id = ? AND {in_ids}`,
		active, sessionID, s.d.IDs(ids))
}

// expandable checks that c is collapsed and no later compaction covers the
// messages it added.
func (s *Store) expandable(ctx context.Context, tx conn, c *persistence.Compaction) error {
	if c.Expanded {
		return fmt.Errorf("compaction %d is already expanded: %w", c.ID, persistence.ErrConflict)
	}
	n, err := s.countActive(ctx, tx, c.SessionID, c.AddedIDs)
	if err != nil {
		return err
	}
	if n != len(c.AddedIDs) {
		return fmt.Errorf("compaction %d is covered by a later compaction; expand that one first: %w", c.ID, persistence.ErrConflict)
	}
	return nil
}

// collapsible checks that c is expanded and none of its originals was
// compacted again since.
func (s *Store) collapsible(ctx context.Context, tx conn, c *persistence.Compaction) error {
	if !c.Expanded {
		return fmt.Errorf("compaction %d is not expanded: %w", c.ID, persistence.ErrConflict)
	}
	n, err := s.countActive(ctx, tx, c.SessionID, c.CompactedIDs)
	if err != nil {
		return err
	}
	if n != len(distinctIDs(c.CompactedIDs)) {
		return fmt.Errorf("some messages of compaction %d were compacted again since it was expanded: %w", c.ID, persistence.ErrConflict)
	}
	return nil
}

// ExpandCompaction re-activates a compaction's originals and hides what it
// added.
func (s *Store) ExpandCompaction(ctx context.Context, sessionID string, id int64) error {
	return s.errorf("expand compaction", s.setExpanded(ctx, sessionID, id, true))
}

// CollapseCompaction undoes ExpandCompaction.
func (s *Store) CollapseCompaction(ctx context.Context, sessionID string, id int64) error {
	return s.errorf("collapse compaction", s.setExpanded(ctx, sessionID, id, false))
}

// setExpanded expands or collapses compaction id, when it can be, and
// records the change.
func (s *Store) setExpanded(ctx context.Context, sessionID string, id int64, expand bool) error {
	return s.write(ctx, func(tx conn) error {
		c, err := s.lockedCompaction(ctx, tx, sessionID, id)
		if err != nil {
			return err
		}
		// Collapsed, the originals are compacted into c again.
		check, into := s.collapsible, &c.ID
		if expand {
			check, into = s.expandable, nil
		}
		if err := check(ctx, tx, c); err != nil {
			return err
		}
		if _, err := s.setActive(ctx, tx, sessionID, c.CompactedIDs, expand, into); err != nil {
			return err
		}
		if _, err := s.setActive(ctx, tx, sessionID, c.AddedIDs, !expand, nil); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `UPDATE compactions SET expanded = ? WHERE id = ?`, expand, c.ID); err != nil {
			return err
		}
		return s.recordChange(ctx, tx, c.SessionID, nil, append(append([]int64(nil), c.CompactedIDs...), c.AddedIDs...), nil, c.ID, false, s.now())
	})
}

// DeleteCompaction undoes a compaction for good.
func (s *Store) DeleteCompaction(ctx context.Context, sessionID string, id int64) error {
	err := s.write(ctx, func(tx conn) error {
		c, err := s.lockedCompaction(ctx, tx, sessionID, id)
		if err != nil {
			return err
		}
		if !c.Expanded {
			if err := s.expandable(ctx, tx, c); err != nil {
				return err
			}
			if _, err := s.setActive(ctx, tx, sessionID, c.CompactedIDs, true, nil); err != nil {
				return err
			}
		}
		if len(c.AddedIDs) > 0 {
			if _, err := tx.Exec(ctx, `DELETE FROM messages WHERE session_id = ? AND {in_ids}`, sessionID, s.d.IDs(c.AddedIDs)); err != nil {
				return err
			}
		}
		if _, err := tx.Exec(ctx, `DELETE FROM compactions WHERE id = ?`, id); err != nil {
			return err
		}
		return s.recordChange(ctx, tx, sessionID, nil, c.CompactedIDs, c.AddedIDs, id, true, s.now())
	})
	return s.errorf("delete compaction", err)
}

// SetTokenCounts caches token counts for one encoding.
func (s *Store) SetTokenCounts(ctx context.Context, sessionID, encoding string, counts map[int64]int) error {
	ids := make([]int64, 0, len(counts))
	ns := make([]int64, 0, len(counts))
	for id, n := range counts {
		ids = append(ids, id)
		ns = append(ns, int64(n))
	}
	err := s.write(ctx, func(tx conn) error {
		if err := s.requireSession(ctx, tx, sessionID); err != nil {
			return err
		}
		if len(ids) == 0 {
			return nil
		}
		if s.d.SetTokenCounts != nil {
			return s.d.SetTokenCounts(ctx, tx.c, sessionID, encoding, ids, ns)
		}
		for i, id := range ids {
			if _, err := tx.Exec(ctx, `UPDATE messages SET token_count = ?, token_encoding = ? WHERE session_id = ? AND id = ?`,
				ns[i], encoding, sessionID, id); err != nil {
				return err
			}
		}
		return nil
	})
	return s.errorf("set token counts", err)
}

// recordChange records, inside tx, what a compaction operation changed: the
// messages it added (whole), the compaction state after it of the messages
// it touched, the messages it deleted, and compaction compID (compDeleted:
// removed).
func (s *Store) recordChange(ctx context.Context, tx conn, sessionID string, added, touched, deleted []int64, compID int64, compDeleted bool, t time.Time) error {
	rec := persistence.ChangeRecord{DeletedMessages: deleted}
	if len(added) > 0 {
		rows, err := tx.Query(ctx, `SELECT `+MessageColumns+` FROM messages
			WHERE session_id = ? AND {in_ids} ORDER BY seq`, sessionID, s.d.IDs(added))
		msgs, err := s.scanMessages(rows, err, sessionID)
		if err != nil {
			return err
		}
		for i := range msgs {
			rec.Messages = append(rec.Messages, persistence.RecordOf(&msgs[i]))
		}
	}
	var err error
	if rec.Patches, err = s.patches(ctx, tx, sessionID, touched, deleted); err != nil {
		return err
	}
	if compDeleted {
		rec.DeletedCompaction = compID
	} else if compID != 0 {
		c, err := s.getCompaction(ctx, tx, sessionID, compID)
		if err != nil {
			return err
		}
		rec.Compaction = c
	}
	return s.project(ctx, tx, sessionID, persistence.EventMessagesChanged, t, rec)
}

// patches reads the compaction state of the messages ids (but those
// deleted), one patch per distinct state, ids in seq order.
func (s *Store) patches(ctx context.Context, tx conn, sessionID string, ids, deleted []int64) ([]persistence.MessagePatch, error) {
	gone := make(map[int64]bool, len(deleted))
	for _, id := range deleted {
		gone[id] = true
	}
	live := make([]int64, 0, len(ids))
	for _, id := range distinctIDs(ids) {
		if !gone[id] {
			live = append(live, id)
		}
	}
	if len(live) == 0 {
		return nil, nil
	}
	rows, err := tx.Query(ctx, `SELECT id, is_active, compacted_into_id FROM messages
		WHERE session_id = ? AND {in_ids} ORDER BY seq`, sessionID, s.d.IDs(live))
	type state struct {
		active bool
		into   int64 // 0: none
	}
	type row struct {
		id int64
		state
	}
	list, err := collect(rows, err, func(r Row) (row, error) {
		var (
			x    row
			into *int64
		)
		err := r.Scan(&x.id, &x.active, &into)
		if into != nil {
			x.into = *into
		}
		return x, err
	})
	if err != nil {
		return nil, err
	}
	var out []persistence.MessagePatch
	at := make(map[state]int)
	for _, x := range list {
		i, ok := at[x.state]
		if !ok {
			i = len(out)
			at[x.state] = i
			p := persistence.MessagePatch{IsActive: x.active}
			if x.into != 0 {
				into := x.into
				p.CompactedIntoID = &into
			}
			out = append(out, p)
		}
		out[i].IDs = append(out[i].IDs, x.id)
	}
	return out, nil
}
