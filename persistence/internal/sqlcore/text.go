package sqlcore

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/crow-acp/crow-acp/persistence"
)

// A message's long text is stored once, in the event log (issue 19): its
// row's content column holds what comes before it (often nothing) and
// content_at the seqs, in the session's stream, of the message_appended and
// message_updated records whose text extends it, in order
// (persistence.RecordText, ApplyText). The log is what the rows are
// rebuilt from anyway; a read puts the text back.

// textRef is a row read with content_at set: msgs[i] of the read, the
// column, and whether its parts are its content (contentParts), to be
// built once the content is.
type textRef struct {
	i            int
	at           string
	contentParts bool
}

// parseTextAt parses a content_at column.
func parseTextAt(at string) ([]int64, error) {
	var seqs []int64
	for f := range strings.SplitSeq(at, ",") {
		seq, err := strconv.ParseInt(f, 10, 64)
		if err != nil || seq <= 0 {
			return nil, fmt.Errorf("content_at %.40q: not a list of seqs", at)
		}
		seqs = append(seqs, seq)
	}
	return seqs, nil
}

// textAt is content_at extended by seq.
func textAt(at string, seq int64) string {
	if at == "" {
		return strconv.FormatInt(seq, 10)
	}
	return at + "," + strconv.FormatInt(seq, 10)
}

// maxSeqGap is the gap between two records a read fetches the events
// between rather than querying again: the events of a turn between its
// messages' records are a few, and rarely long.
const maxSeqGap = 64

// resolveText puts back, through q, the text of the rows refs name among
// msgs (messages of session sessionID), and the parts made of it.
func (s *Store) resolveText(ctx context.Context, q conn, sessionID string, msgs []persistence.Message, refs []textRef) error {
	lists := make([][]int64, len(refs))
	var seqs []int64
	for k, r := range refs {
		var err error
		if lists[k], err = parseTextAt(r.at); err != nil {
			return fmt.Errorf("message %d: %w", msgs[r.i].ID, err)
		}
		seqs = append(seqs, lists[k]...)
	}
	slices.Sort(seqs)
	seqs = slices.Compact(seqs)
	bodies := make([][]byte, len(seqs))
	for lo := 0; lo < len(seqs); {
		hi := lo
		for hi+1 < len(seqs) && seqs[hi+1]-seqs[hi] <= maxSeqGap {
			hi++
		}
		if err := s.readRecords(ctx, q, sessionID, seqs, bodies, lo, hi); err != nil {
			return err
		}
		lo = hi + 1
	}
	for k, r := range refs {
		m := &msgs[r.i]
		text := m.Content
		for _, seq := range lists[k] {
			i, _ := slices.BinarySearch(seqs, seq)
			if bodies[i] == nil {
				return fmt.Errorf("message %d: its text's record (event %d of the session) is missing", m.ID, seq)
			}
			t, from, err := persistence.RecordText(bodies[i])
			if err == nil {
				text, err = persistence.ApplyText(text, t, from)
			}
			if err != nil {
				return fmt.Errorf("message %d: the text of event %d: %w", m.ID, seq, err)
			}
		}
		m.Content = text
		if r.contentParts {
			m.Parts = []persistence.Part{{Type: "text", Text: text}}
		}
	}
	return nil
}

// readRecords reads the bodies of the message records among seqs[lo..hi]
// into bodies.
func (s *Store) readRecords(ctx context.Context, q conn, sessionID string, seqs []int64, bodies [][]byte, lo, hi int) error {
	rows, err := q.Query(ctx, `SELECT seq, body FROM events WHERE stream = ? AND seq >= ? AND seq <= ?
		AND kind IN ('message_appended', 'message_updated')`, sessionID, seqs[lo], seqs[hi])
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		var (
			seq  int64
			body []byte
		)
		if err := rows.Scan(&seq, &body); err != nil {
			return err
		}
		if i, ok := slices.BinarySearch(seqs[lo:hi+1], seq); ok {
			bodies[lo+i] = body
		}
	}
	return rows.Err()
}

// setTextAt points the rows of new messages whose text only their
// message_appended records keep (MessageRow.Ref) at those records, given
// the seqs they were recorded at (recSeqs[i] for rows[i]).
func (s *Store) setTextAt(ctx context.Context, tx conn, sessionID string, rows []MessageRow, ids, recSeqs []int64) error {
	var refIDs []int64
	offset, uniform := int64(0), true
	for i := range rows {
		if !rows[i].Ref {
			continue
		}
		d := recSeqs[i] - rows[i].Seq
		if len(refIDs) == 0 {
			offset = d
		}
		uniform = uniform && d == offset
		refIDs = append(refIDs, ids[i])
	}
	if len(refIDs) == 0 {
		return nil
	}
	if uniform { // the usual case: both numbered in the rows' order, one statement
		_, err := tx.Exec(ctx, `UPDATE messages SET content_at = CAST(seq + ? AS TEXT) WHERE session_id = ? AND {in_ids}`,
			offset, sessionID, s.d.IDs(refIDs))
		return err
	}
	for i := range rows {
		if rows[i].Ref {
			if _, err := tx.Exec(ctx, `UPDATE messages SET content_at = ? WHERE id = ?`, textAt("", recSeqs[i]), ids[i]); err != nil {
				return err
			}
		}
	}
	return nil
}
