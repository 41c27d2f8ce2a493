package sqlcore

import (
	"context"
	"errors"
	"fmt"

	"github.com/crow-acp/crow-acp/internal/persistence"
)

// SaveCheckpoint stores c and its bytes; the first file checkpoint of a
// (session, turn, path) wins.
func (s *Store) SaveCheckpoint(ctx context.Context, c *persistence.Checkpoint, data []byte, l persistence.CheckpointLimits) (bool, error) {
	saved, err := s.saveCheckpoint(ctx, c, data, l.OrDefaults())
	return saved, s.errorf("save checkpoint", err)
}

func (s *Store) saveCheckpoint(ctx context.Context, c *persistence.Checkpoint, data []byte, l persistence.CheckpointLimits) (bool, error) {
	if c == nil || c.SessionID == "" {
		return false, errors.New("checkpoint without a session")
	}
	switch c.Kind {
	case persistence.CheckpointFile, persistence.CheckpointTree, persistence.CheckpointTreeAfter:
	default:
		return false, fmt.Errorf("checkpoint kind %q", c.Kind)
	}
	createdAt := s.orNow(c.CreatedAt, s.now())
	created, err := s.d.Time(createdAt)
	if err != nil {
		return false, err
	}
	ins := *c
	ins.Path = s.d.Text(c.Path)
	if ins.Kind == persistence.CheckpointFile && ins.Before.Exists && ins.Unrestorable == "" {
		ins.Before.Hash, ins.Size = persistence.Hash(data), int64(len(data))
	}
	var id int64
	saved := false
	err = s.write(ctx, func(tx conn) error {
		if err := s.lockSession(ctx, tx, c.SessionID, fmt.Errorf("session %q: %w", c.SessionID, persistence.ErrNotFound)); err != nil {
			return err
		}
		if err := s.requireSession(ctx, tx, c.SessionID); err != nil {
			return err
		}
		if ins.Kind == persistence.CheckpointFile {
			var one int
			err := tx.QueryRow(ctx, `SELECT 1 FROM checkpoints WHERE session_id = ? AND turn = ? AND path = ? AND kind = 'file'`,
				c.SessionID, c.Turn, ins.Path).Scan(&one)
			if err == nil {
				return nil // the first wins
			}
			if !s.d.IsNoRows(err) {
				return err
			}
			if ins.Before.Exists && ins.Unrestorable == "" {
				if err := s.putBlob(ctx, tx, c.SessionID, ins.Before.Hash, data, l); errors.Is(err, persistence.ErrBlobLimit) {
					ins.Unrestorable = err.Error()
				} else if err != nil {
					return err
				}
			}
		}
		err := tx.QueryRow(ctx, `
			INSERT INTO checkpoints (session_id, turn, kind, path, existed, mode, size, hash, unrestorable, created_at)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
			RETURNING id`,
			c.SessionID, c.Turn, ins.Kind, ins.Path, ins.Before.Exists, int64(ins.Before.Mode), ins.Size,
			ins.Before.Hash, persistence.ValidText(ins.Unrestorable), created).Scan(&id)
		saved = err == nil
		return err
	})
	if err != nil || !saved {
		return false, err
	}
	ins.ID, ins.CreatedAt, ins.After = id, createdAt, nil
	*c = ins
	return true, nil
}

// putBlob keeps data under hash unless the session has it, within l.
func (s *Store) putBlob(ctx context.Context, tx conn, sessionID, hash string, data []byte, l persistence.CheckpointLimits) error {
	var one int
	err := tx.QueryRow(ctx, `SELECT 1 FROM checkpoint_blobs WHERE session_id = ? AND hash = ?`, sessionID, hash).Scan(&one)
	if err == nil {
		return nil
	}
	if !s.d.IsNoRows(err) {
		return err
	}
	if int64(len(data)) > l.File {
		return fmt.Errorf("%d bytes, over the per-file limit of %d: %w", len(data), l.File, persistence.ErrBlobLimit)
	}
	var total int64
	if err := tx.QueryRow(ctx, `SELECT COALESCE(SUM(size), 0) FROM checkpoint_blobs WHERE session_id = ?`, sessionID).Scan(&total); err != nil {
		return err
	}
	if total+int64(len(data)) > l.Session {
		return fmt.Errorf("the session's checkpoints would pass their limit of %d bytes: %w", l.Session, persistence.ErrBlobLimit)
	}
	if data == nil {
		data = []byte{}
	}
	_, err = tx.Exec(ctx, `INSERT INTO checkpoint_blobs (session_id, hash, size, data) VALUES (?, ?, ?, ?)`,
		sessionID, hash, int64(len(data)), data)
	return err
}

// PutBlob keeps data once per session.
func (s *Store) PutBlob(ctx context.Context, sessionID string, data []byte, l persistence.CheckpointLimits) (string, error) {
	hash := persistence.Hash(data)
	err := s.write(ctx, func(tx conn) error {
		if err := s.requireSession(ctx, tx, sessionID); err != nil {
			return err
		}
		return s.putBlob(ctx, tx, sessionID, hash, data, l.OrDefaults())
	})
	if err != nil {
		return "", s.errorf("put blob", err)
	}
	return hash, nil
}

// Blob returns a session's bytes kept under hash.
func (s *Store) Blob(ctx context.Context, sessionID, hash string) ([]byte, error) {
	var data []byte
	err := s.read().QueryRow(ctx, `SELECT data FROM checkpoint_blobs WHERE session_id = ? AND hash = ?`, sessionID, hash).Scan(&data)
	if s.d.IsNoRows(err) {
		err = fmt.Errorf("blob %s of session %q: %w", hash, sessionID, persistence.ErrNotFound)
	}
	if err != nil {
		return nil, s.errorf("blob", err)
	}
	if data == nil {
		data = []byte{}
	}
	return data, nil
}

// Blobs returns every blob of a session, by hash (for export).
func (s *Store) Blobs(ctx context.Context, sessionID string) ([]persistence.Blob, error) {
	rows, err := s.read().Query(ctx, `SELECT hash, data FROM checkpoint_blobs WHERE session_id = ? ORDER BY hash`, sessionID)
	out, err := collect(rows, err, func(r Row) (persistence.Blob, error) {
		var b persistence.Blob
		err := r.Scan(&b.Hash, &b.Data)
		if b.Data == nil {
			b.Data = []byte{}
		}
		return b, err
	})
	return out, s.errorf("blobs", err)
}

// SetCheckpointAfter records what the agent's change left.
func (s *Store) SetCheckpointAfter(ctx context.Context, sessionID string, turn int64, path string, after persistence.FileState) error {
	state := "absent"
	if after.Exists {
		state = "file"
	}
	err := s.write(ctx, func(tx conn) error {
		n, err := tx.Exec(ctx, `UPDATE checkpoints SET after_state = ?, after_mode = ?, after_hash = ?
			WHERE session_id = ? AND turn = ? AND path = ? AND kind = 'file'`,
			state, int64(after.Mode), after.Hash, sessionID, turn, s.d.Text(path))
		if err == nil && n == 0 {
			err = fmt.Errorf("checkpoint of %q in turn %d of session %q: %w", path, turn, sessionID, persistence.ErrNotFound)
		}
		return err
	})
	return s.errorf("set checkpoint after", err)
}

const checkpointColumns = `id, turn, kind, path, existed, mode, size, hash, unrestorable, after_state, after_mode, after_hash, created_at`

// Checkpoints lists a session's checkpoints of turns >= fromTurn.
func (s *Store) Checkpoints(ctx context.Context, sessionID string, fromTurn int64) ([]persistence.Checkpoint, error) {
	if err := s.requireSession(ctx, s.read(), sessionID); err != nil {
		return nil, s.errorf("checkpoints", err)
	}
	rows, err := s.read().Query(ctx, `SELECT `+checkpointColumns+` FROM checkpoints
		WHERE session_id = ? AND turn >= ? ORDER BY id`, sessionID, fromTurn)
	out, err := collect(rows, err, func(r Row) (persistence.Checkpoint, error) {
		c := persistence.Checkpoint{SessionID: sessionID}
		var mode, afterMode int64
		var afterState, afterHash string
		err := r.Scan(&c.ID, &c.Turn, &c.Kind, &c.Path, &c.Before.Exists, &mode, &c.Size, &c.Before.Hash,
			&c.Unrestorable, &afterState, &afterMode, &afterHash, s.d.ScanTime(&c.CreatedAt))
		c.Before.Mode = uint32(mode)
		if afterState != "" {
			c.After = &persistence.FileState{Exists: afterState == "file", Mode: uint32(afterMode), Hash: afterHash}
		}
		c.CreatedAt = c.CreatedAt.UTC()
		return c, err
	})
	return out, s.errorf("checkpoints", err)
}

// CheckpointStats counts a session's checkpoints and blob bytes.
func (s *Store) CheckpointStats(ctx context.Context, sessionID string) (persistence.CheckpointStats, error) {
	var st persistence.CheckpointStats
	err := s.read().QueryRow(ctx, `SELECT
			(SELECT COUNT(*) FROM checkpoints WHERE session_id = ? AND kind = 'file'),
			(SELECT COUNT(*) FROM checkpoints WHERE session_id = ? AND kind <> 'file'),
			(SELECT COALESCE(SUM(size), 0) FROM checkpoint_blobs WHERE session_id = ?)`,
		sessionID, sessionID, sessionID).Scan(&st.Files, &st.Trees, &st.Bytes)
	return st, s.errorf("checkpoint stats", err)
}
