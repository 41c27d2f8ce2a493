package sqlcore

import (
	"context"
	"errors"
	"fmt"

	"github.com/crow-acp/crow-acp/internal/persistence"
)

const undoColumns = `id, session_id, from_turn, state, force, files, hidden_ids, shown_ids, last_seq, created_at, updated_at`

func (s *Store) scanUndo(r Row) (persistence.Undo, error) {
	var (
		u     persistence.Undo
		files []byte
	)
	err := r.Scan(&u.ID, &u.SessionID, &u.FromTurn, &u.State, &u.Force, &files, s.d.ScanIDs(&u.Hidden), s.d.ScanIDs(&u.Shown),
		&u.LastSeq, s.d.ScanTime(&u.CreatedAt), s.d.ScanTime(&u.UpdatedAt))
	if err != nil {
		return u, err
	}
	if u.Files, err = DecodeJSONSlice[persistence.UndoFile]("undo files", files); err != nil {
		return u, err
	}
	u.CreatedAt, u.UpdatedAt = u.CreatedAt.UTC(), u.UpdatedAt.UTC()
	return u, nil
}

// CreateUndo stores a pending (or redoing) undo record.
func (s *Store) CreateUndo(ctx context.Context, u *persistence.Undo) error {
	return s.errorf("create undo", s.createUndo(ctx, u))
}

func (s *Store) createUndo(ctx context.Context, u *persistence.Undo) error {
	if u == nil || u.SessionID == "" || u.FromTurn <= 0 {
		return errors.New("an undo needs a session and a turn")
	}
	if u.State != persistence.UndoPending {
		return fmt.Errorf("a new undo is %s, not %s", persistence.UndoPending, u.State)
	}
	files, err := undoFiles(u.Files)
	if err != nil {
		return err
	}
	t := s.now()
	at, err := s.d.Time(t)
	if err != nil {
		return err
	}
	var id int64
	err = s.write(ctx, func(tx conn) error {
		if err := s.lockSession(ctx, tx, u.SessionID, fmt.Errorf("session %q: %w", u.SessionID, persistence.ErrNotFound)); err != nil {
			return err
		}
		if err := s.requireSession(ctx, tx, u.SessionID); err != nil {
			return err
		}
		if err := s.noUnfinishedUndo(ctx, tx, u.SessionID); err != nil {
			return err
		}
		return tx.QueryRow(ctx, `INSERT INTO undos (session_id, from_turn, state, force, files, created_at, updated_at)
			VALUES (?, ?, ?, ?, ?, ?, ?) RETURNING id`,
			u.SessionID, u.FromTurn, u.State, u.Force, files, at, at).Scan(&id)
	})
	if err != nil {
		return err
	}
	u.ID, u.CreatedAt, u.UpdatedAt = id, t, t
	return nil
}

// noUnfinishedUndo is ErrConflict while an undo of the session is pending
// or redoing.
func (s *Store) noUnfinishedUndo(ctx context.Context, tx conn, sessionID string) error {
	var id int64
	err := tx.QueryRow(ctx, `SELECT id FROM undos WHERE session_id = ? AND state IN ('pending', 'redoing')`, sessionID).Scan(&id)
	if s.d.IsNoRows(err) {
		return nil
	}
	if err == nil {
		err = fmt.Errorf("undo %d of session %q is unfinished: %w", id, sessionID, persistence.ErrConflict)
	}
	return err
}

func undoFiles(files []persistence.UndoFile) (any, error) {
	if files == nil {
		files = []persistence.UndoFile{}
	}
	for i := range files {
		files[i].Path = persistence.ValidText(files[i].Path)
		files[i].Reason = persistence.ValidText(files[i].Reason)
		files[i].Diff = persistence.ValidText(files[i].Diff)
	}
	return JSONSlice("undo files", files)
}

// UpdateUndo moves u to its State, hiding or showing its messages.
func (s *Store) UpdateUndo(ctx context.Context, u *persistence.Undo) error {
	return s.errorf("update undo", s.updateUndo(ctx, u))
}

// undoMoves are the state changes an undo may make.
var undoMoves = map[[2]string]bool{
	{persistence.UndoPending, persistence.UndoPending}:     true, // progress
	{persistence.UndoPending, persistence.UndoDone}:        true,
	{persistence.UndoPending, persistence.UndoInterrupted}: true,
	{persistence.UndoDone, persistence.UndoRedoing}:        true,
	{persistence.UndoRedoing, persistence.UndoRedoing}:     true,
	{persistence.UndoRedoing, persistence.UndoRedone}:      true,
	{persistence.UndoRedoing, persistence.UndoInterrupted}: true,
}

func (s *Store) updateUndo(ctx context.Context, u *persistence.Undo) error {
	if u == nil {
		return errors.New("nil undo")
	}
	files, err := undoFiles(u.Files)
	if err != nil {
		return err
	}
	t := s.now()
	at, err := s.d.Time(t)
	if err != nil {
		return err
	}
	var done persistence.Undo
	err = s.write(ctx, func(tx conn) error {
		if err := s.lockSession(ctx, tx, u.SessionID, fmt.Errorf("session %q: %w", u.SessionID, persistence.ErrNotFound)); err != nil {
			return err
		}
		cur, err := s.scanUndo(tx.QueryRow(ctx, `SELECT `+undoColumns+` FROM undos WHERE id = ? AND session_id = ?`, u.ID, u.SessionID))
		if s.d.IsNoRows(err) {
			return fmt.Errorf("undo %d of session %q: %w", u.ID, u.SessionID, persistence.ErrNotFound)
		}
		if err != nil {
			return err
		}
		if !undoMoves[[2]string{cur.State, u.State}] {
			return fmt.Errorf("undo %d is %s: it cannot become %s: %w", u.ID, cur.State, u.State, persistence.ErrConflict)
		}
		var last int64
		switch {
		case cur.State == persistence.UndoPending && u.State == persistence.UndoDone:
			if cur.Hidden, cur.Shown, err = s.hideTurns(ctx, tx, u.SessionID, cur.FromTurn); err != nil {
				return err
			}
			if last, err = s.bumpSession(ctx, tx, u.SessionID, 0, at); err != nil {
				return err
			}
			cur.LastSeq = last
			if err := s.recordChange(ctx, tx, u.SessionID, nil, append(append([]int64(nil), cur.Hidden...), cur.Shown...), nil, 0, false, t); err != nil {
				return err
			}
		case cur.State == persistence.UndoDone && u.State == persistence.UndoRedoing:
			if err := tx.QueryRow(ctx, `SELECT last_seq FROM sessions WHERE id = ?`, u.SessionID).Scan(&last); err != nil {
				return err
			}
			if last != cur.LastSeq {
				return fmt.Errorf("the session has new messages since undo %d: nothing to redo: %w", u.ID, persistence.ErrConflict)
			}
		case cur.State == persistence.UndoRedoing && u.State == persistence.UndoRedone:
			if _, err := s.setActive(ctx, tx, u.SessionID, cur.Hidden, true, nil); err != nil {
				return err
			}
			if _, err := s.setActive(ctx, tx, u.SessionID, cur.Shown, false, nil); err != nil {
				return err
			}
			if _, err := s.bumpSession(ctx, tx, u.SessionID, 0, at); err != nil {
				return err
			}
			if err := s.recordChange(ctx, tx, u.SessionID, nil, append(append([]int64(nil), cur.Hidden...), cur.Shown...), nil, 0, false, t); err != nil {
				return err
			}
		}
		hidden, err := s.d.IDArray("hidden ids", cur.Hidden)
		if err != nil {
			return err
		}
		shown, err := s.d.IDArray("shown ids", cur.Shown)
		if err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `UPDATE undos SET state = ?, files = ?, hidden_ids = ?, shown_ids = ?, last_seq = ?, updated_at = ?
			WHERE id = ?`, u.State, files, hidden, shown, cur.LastSeq, at, u.ID); err != nil {
			return err
		}
		done = cur
		return nil
	})
	if err != nil {
		return err
	}
	u.FromTurn, u.Hidden, u.Shown, u.LastSeq, u.CreatedAt, u.UpdatedAt = done.FromTurn, done.Hidden, done.Shown, done.LastSeq, done.CreatedAt, t
	return nil
}

// hideTurns makes the session's active messages from seq fromTurn on
// inactive, and active again the messages before it that a compaction made
// since that turn began had compacted: the context is as it was before the
// turn's prompt.
func (s *Store) hideTurns(ctx context.Context, tx conn, sessionID string, fromTurn int64) (hidden, shown []int64, err error) {
	scanID := func(r Row) (int64, error) {
		var id int64
		return id, r.Scan(&id)
	}
	rows, err := tx.Query(ctx, `SELECT id FROM messages WHERE session_id = ? AND seq >= ? AND {active} ORDER BY seq`, sessionID, fromTurn)
	if hidden, err = collect(rows, err, scanID); err != nil {
		return nil, nil, err
	}
	rows, err = tx.Query(ctx, `SELECT id FROM messages WHERE session_id = ? AND seq < ? AND NOT {active}
		AND compacted_into_id IN (SELECT id FROM compactions WHERE session_id = ?
			AND created_at >= (SELECT created_at FROM messages WHERE session_id = ? AND seq = ?))
		ORDER BY seq`, sessionID, fromTurn, sessionID, sessionID, fromTurn)
	if shown, err = collect(rows, err, scanID); err != nil {
		return nil, nil, err
	}
	if _, err := s.setActive(ctx, tx, sessionID, hidden, false, nil); err != nil {
		return nil, nil, err
	}
	if _, err := s.setActive(ctx, tx, sessionID, shown, true, nil); err != nil {
		return nil, nil, err
	}
	return hidden, shown, nil
}

// Undos lists a session's undo records, oldest first.
func (s *Store) Undos(ctx context.Context, sessionID string) ([]persistence.Undo, error) {
	rows, err := s.read().Query(ctx, `SELECT `+undoColumns+` FROM undos WHERE session_id = ? ORDER BY id`, sessionID)
	out, err := collect(rows, err, s.scanUndo)
	return out, s.errorf("undos", err)
}

// UnfinishedUndos lists the pending and redoing undos of every session.
func (s *Store) UnfinishedUndos(ctx context.Context) ([]persistence.Undo, error) {
	rows, err := s.read().Query(ctx, `SELECT `+undoColumns+` FROM undos WHERE state IN ('pending', 'redoing') ORDER BY id`)
	out, err := collect(rows, err, s.scanUndo)
	return out, s.errorf("unfinished undos", err)
}
