package sqlcore

import (
	"context"
	"fmt"

	"github.com/crow-acp/crow-acp/internal/persistence"
)

// ImportSession stores a whole session exactly as d has it, in one
// transaction, with new ids. Times and text are stored as the database
// keeps them (Dialect.Stored, Dialect.Text), in d too.
func (s *Store) ImportSession(ctx context.Context, d *persistence.SessionDump) error {
	return s.errorf("import session", s.importSession(ctx, d))
}

func (s *Store) importSession(ctx context.Context, d *persistence.SessionDump) error {
	if err := d.Check(); err != nil {
		return err
	}
	sess := d.Session
	meta, err := s.rawJSON("metadata", sess.Metadata)
	if err != nil {
		return err
	}
	created, err := s.d.Time(s.d.Stored(sess.CreatedAt))
	if err != nil {
		return err
	}
	updated, err := s.d.Time(s.d.Stored(sess.UpdatedAt))
	if err != nil {
		return err
	}
	// Encode everything before taking the write lock.
	rows := make([]MessageRow, len(d.Messages))
	for i := range d.Messages {
		m := &d.Messages[i]
		if rows[i], err = s.encodeMessage(sess.ID, m, m.CreatedAt); err != nil {
			return fmt.Errorf("message %d: %w", i, err)
		}
		rows[i].Seq, rows[i].Active = m.Seq, m.IsActive
	}
	type compRow struct{ created, settings any }
	comps := make([]compRow, len(d.Compactions))
	for i, c := range d.Compactions {
		if comps[i].created, err = s.d.Time(s.d.Stored(c.CreatedAt)); err != nil {
			return fmt.Errorf("compaction %d: %w", i, err)
		}
		if comps[i].settings, err = s.rawJSON("settings", c.Settings); err != nil {
			return fmt.Errorf("compaction %d: %w", i, err)
		}
	}

	var msgIDs []int64
	compIDs := make([]int64, len(d.Compactions))
	err = s.write(ctx, func(tx conn) error {
		n, err := tx.Exec(ctx, `
			INSERT INTO sessions (id, cwd, title, created_at, updated_at, metadata, last_seq)
			VALUES (?, ?, ?, ?, ?, ?, ?)
			ON CONFLICT (id) DO NOTHING`,
			sess.ID, sess.Cwd, s.d.Text(sess.Title), created, updated, meta, d.LastSeq())
		if err != nil {
			return err
		}
		if n == 0 {
			return fmt.Errorf("session %q: %w", sess.ID, persistence.ErrConflict)
		}
		if msgIDs, err = s.d.InsertMessages(ctx, tx.c, sess.ID, rows); err != nil {
			return err
		}
		newMsg := make(map[int64]int64, len(rows))
		for i, m := range d.Messages {
			newMsg[m.ID] = msgIDs[i]
		}
		newComp := make(map[int64]int64, len(comps))
		for i, c := range d.Compactions {
			c.SessionID = sess.ID
			c.RenumberMessages(newMsg)
			if compIDs[i], err = s.insertCompaction(ctx, tx, &c, comps[i].created, comps[i].settings); err != nil {
				return fmt.Errorf("compaction %d: %w", i, err)
			}
			newComp[c.ID] = compIDs[i]
		}
		// Point compacted messages at their compaction: one statement per
		// compaction.
		into := make(map[int64][]int64)
		var order []int64
		for i, m := range d.Messages {
			if m.CompactedIntoID == nil {
				continue
			}
			c := newComp[*m.CompactedIntoID]
			if _, seen := into[c]; !seen {
				order = append(order, c)
			}
			into[c] = append(into[c], msgIDs[i])
		}
		for _, c := range order {
			if _, err := tx.Exec(ctx, `UPDATE messages SET compacted_into_id = ? WHERE session_id = ? AND {in_ids}`,
				c, sess.ID, s.d.IDs(into[c])); err != nil {
				return err
			}
		}
		if err := s.importCheckpoints(ctx, tx, d, newMsg); err != nil {
			return err
		}
		// The projection starts from the imported state.
		t := s.now()
		snap := persistence.ImportSnapshot(storedDump(d, rows), msgIDs, compIDs, s.d.Stored)
		return s.project(ctx, tx, sess.ID, persistence.EventSessionImported, t, snap)
	})
	if err != nil {
		return err
	}
	d.Renumber(msgIDs, compIDs)
	d.Session.CreatedAt, d.Session.UpdatedAt = s.d.Stored(sess.CreatedAt), s.d.Stored(sess.UpdatedAt)
	d.Session.Title = s.d.Text(sess.Title)
	for i := range d.Messages {
		m := &d.Messages[i]
		m.CreatedAt, m.Content, m.Reasoning, m.ToolCallID = rows[i].CreatedAt, rows[i].Content, rows[i].Reasoning, rows[i].ToolCallID
	}
	for i := range d.Compactions {
		d.Compactions[i].CreatedAt = s.d.Stored(d.Compactions[i].CreatedAt)
	}
	return nil
}

// storedDump is d with its messages' text as rows store it (PostgreSQL
// keeps a NUL as U+FFFD): the import's record must hold what the table
// does, as the update records that later append to a message measure the
// stored text.
func storedDump(d *persistence.SessionDump, rows []MessageRow) *persistence.SessionDump {
	c := *d
	c.Messages = make([]persistence.Message, len(d.Messages))
	for i, m := range d.Messages {
		m.Content, m.Reasoning, m.ToolCallID = rows[i].Content, rows[i].Reasoning, rows[i].ToolCallID
		c.Messages[i] = m
	}
	return &c
}

// importCheckpoints stores d's blobs, checkpoints and undos (their message
// ids renumbered by newMsg), setting their new ids in d.
func (s *Store) importCheckpoints(ctx context.Context, tx conn, d *persistence.SessionDump, newMsg map[int64]int64) error {
	id := d.Session.ID
	for _, b := range d.Blobs {
		data := b.Data
		if data == nil {
			data = []byte{}
		}
		if _, err := tx.Exec(ctx, `INSERT INTO checkpoint_blobs (session_id, hash, size, data) VALUES (?, ?, ?, ?)
			ON CONFLICT DO NOTHING`, id, b.Hash, int64(len(data)), data); err != nil {
			return fmt.Errorf("blob %s: %w", b.Hash, err)
		}
	}
	for i := range d.Checkpoints {
		c := &d.Checkpoints[i]
		created, err := s.d.Time(s.d.Stored(c.CreatedAt))
		if err != nil {
			return fmt.Errorf("checkpoint %d: %w", i, err)
		}
		after := persistence.FileState{}
		afterState := ""
		if c.After != nil {
			after, afterState = *c.After, "absent"
			if after.Exists {
				afterState = "file"
			}
		}
		if err := tx.QueryRow(ctx, `
			INSERT INTO checkpoints (session_id, turn, kind, path, existed, mode, size, hash, unrestorable,
				after_state, after_mode, after_hash, created_at)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
			RETURNING id`,
			id, c.Turn, c.Kind, s.d.Text(c.Path), c.Before.Exists, int64(c.Before.Mode), c.Size, c.Before.Hash,
			persistence.ValidText(c.Unrestorable), afterState, int64(after.Mode), after.Hash, created).Scan(&c.ID); err != nil {
			return fmt.Errorf("checkpoint %d: %w", i, err)
		}
		c.CreatedAt = s.d.Stored(c.CreatedAt)
	}
	for i := range d.Undos {
		u := &d.Undos[i]
		files, err := undoFiles(u.Files)
		if err != nil {
			return err
		}
		hidden, err := s.d.IDArray("hidden ids", persistence.Remap(u.Hidden, newMsg))
		if err != nil {
			return err
		}
		shown, err := s.d.IDArray("shown ids", persistence.Remap(u.Shown, newMsg))
		if err != nil {
			return err
		}
		created, err := s.d.Time(s.d.Stored(u.CreatedAt))
		if err != nil {
			return err
		}
		updated, err := s.d.Time(s.d.Stored(u.UpdatedAt))
		if err != nil {
			return err
		}
		if err := tx.QueryRow(ctx, `INSERT INTO undos (session_id, from_turn, state, force, files, hidden_ids, shown_ids,
				last_seq, created_at, updated_at)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING id`,
			id, u.FromTurn, u.State, u.Force, files, hidden, shown, u.LastSeq, created, updated).Scan(&u.ID); err != nil {
			return fmt.Errorf("undo %d: %w", i, err)
		}
		u.CreatedAt, u.UpdatedAt = s.d.Stored(u.CreatedAt), s.d.Stored(u.UpdatedAt)
	}
	return nil
}
