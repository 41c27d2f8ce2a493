package sqlcore

import (
	"context"
	"fmt"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/crow-acp/crow-acp/persistence"
)

// A message's long text is stored once, in the event log (issue 19): its
// row's content column holds what comes before it (often nothing) and
// content_at the ids of the message_appended and message_updated records
// whose text extends it, in order (persistence.RecordText, ApplyText). The
// log is what the rows are rebuilt from anyway; a read puts the text back.

// streamOf is the number of the session's stream (event_streams), 0 if it
// has none.
func (s *Store) streamOf(ctx context.Context, q conn, sessionID string) (int64, error) {
	var id int64
	err := q.QueryRow(ctx, `SELECT id FROM event_streams WHERE stream = ?`, sessionID).Scan(&id)
	if s.d.IsNoRows(err) {
		return 0, nil
	}
	return id, err
}

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
	var ids []int64
	for f := range strings.SplitSeq(at, ",") {
		id, err := strconv.ParseInt(f, 10, 64)
		if err != nil || id <= 0 {
			return nil, fmt.Errorf("content_at %.40q: not a list of event ids", at)
		}
		ids = append(ids, id)
	}
	return ids, nil
}

// textAt is content_at extended by the event id.
func textAt(at string, id int64) string {
	if at == "" {
		return strconv.FormatInt(id, 10)
	}
	return at + "," + strconv.FormatInt(id, 10)
}

// maxIDGap is the gap between two records' ids a read fetches the events
// between rather than querying again: the events of a turn between its
// messages' records are a few, and rarely long.
const maxIDGap = 64

// resolveText puts back, through q, the text of the rows refs name among
// msgs (messages of session sessionID), and the parts made of it; firsts,
// when not nil, are the texts of the records each ref lists first, read
// with the rows (recordBody).
func (s *Store) resolveText(ctx context.Context, q conn, sessionID string, msgs []persistence.Message, refs []textRef, firsts []recordText) error {
	lists := make([][]int64, len(refs))
	var ids []int64 // the records still to read
	for k, r := range refs {
		var err error
		if lists[k], err = parseTextAt(r.at); err != nil {
			return fmt.Errorf("message %d: %w", msgs[r.i].ID, err)
		}
		rest := lists[k]
		if firsts != nil && firsts[k].read {
			rest = rest[1:]
		}
		ids = append(ids, rest...)
	}
	slices.Sort(ids)
	ids = slices.Compact(ids)
	stream, err := s.streamOf(ctx, q, sessionID)
	if err != nil {
		return err
	}
	dec := textDecoder{kept: s.d.BytesKept}
	for lo := 0; lo < len(ids); {
		hi := lo
		for hi+1 < len(ids) && ids[hi+1]-ids[hi] <= maxIDGap {
			hi++
		}
		if err := s.readRecords(ctx, q, stream, ids, lo, hi, &dec); err != nil {
			dec.results(0)
			return err
		}
		lo = hi + 1
	}
	texts := dec.results(len(ids))
	for k, r := range refs {
		m := &msgs[r.i]
		text := m.Content
		for j, id := range lists[k] {
			var t recordText
			if j == 0 && firsts != nil && firsts[k].read {
				t = firsts[k]
			} else if i, ok := slices.BinarySearch(ids, id); ok {
				t = texts[i]
			}
			if !t.read {
				return fmt.Errorf("message %d: its text's record (event %d) is missing", m.ID, id)
			}
			err := t.err
			if err == nil {
				text, err = persistence.ApplyText(text, t.text, t.from)
			}
			if err != nil {
				return fmt.Errorf("message %d: the text of event %d: %w", m.ID, id, err)
			}
		}
		m.Content = text
		if r.contentParts {
			m.Parts = []persistence.Part{{Type: "text", Text: text}}
		}
	}
	return nil
}

// recordText is what a message record holds for the row that lists it.
type recordText struct {
	text string
	from int
	err  error
	read bool
}

// readRecords reads the message records ids[lo..hi] (close together) of
// the stream numbered stream and hands their bodies to dec as they come.
// It reads the events by id alone, filtering the rest here: given the
// stream too, SQLite would walk all of the session's events through its
// index instead of the few ids.
func (s *Store) readRecords(ctx context.Context, q conn, stream int64, ids []int64, lo, hi int, dec *textDecoder) error {
	rows, err := q.Query(ctx, `SELECT id, stream_id, kind, body FROM events WHERE id >= ? AND id <= ?`, ids[lo], ids[hi])
	if err != nil {
		return err
	}
	defer rows.Close()
	var (
		id, streamID int64
		kind, body   []byte
	)
	dest := []any{&id, &streamID, s.d.ScanBytes(&kind), s.d.ScanBytes(&body)}
	for rows.Next() {
		if err := rows.Scan(dest...); err != nil {
			return err
		}
		k := persistence.EventKind(kind)
		if streamID != stream || k != persistence.EventMessageAppended && k != persistence.EventMessageUpdated {
			continue
		}
		if i, ok := slices.BinarySearch(ids[lo:hi+1], id); ok {
			dec.add(lo+i, body)
		}
	}
	return rows.Err()
}

// textDecoder decodes records' text (persistence.RecordTexts) while they
// are still being read: a load reads a session's whole text, and decoding
// it takes about as long as reading it, so from the second batch of bodies
// on it runs on another core. The zero value is ready to use; kept says the
// bodies added stay valid after the next row (Dialect.BytesKept), else
// they are copied.
type textDecoder struct {
	kept    bool
	batch   textBatch
	batches chan textBatch
	arenas  chan []byte // decoded batches' arenas, for the next ones
	workers sync.WaitGroup
	mu      sync.Mutex
	done    []textBatch // decoded
}

// textBatch is bodies (the driver's, or copies in arena), the index of
// each among the texts read, and what they decode to.
type textBatch struct {
	bodies [][]byte
	size   int
	arena  []byte
	index  []int
	out    []recordText
}

// decoderBatch is the bytes of bodies a batch holds before it is handed
// to a worker; a read of less than one decodes on its own goroutine.
const decoderBatch = 128 << 10

// add queues body as text i.
func (d *textDecoder) add(i int, body []byte) {
	b := &d.batch
	if !d.kept {
		if b.arena == nil {
			// A load's text is megabytes: reused arenas, not fresh
			// memory (a new process pays a page fault for each page).
			select {
			case b.arena = <-d.arenas:
			default:
				size := 4 << 10 // a short read's
				if d.batches != nil {
					size = decoderBatch + 16<<10
				}
				b.arena = make([]byte, 0, max(len(body), size))
			}
		}
		start := len(b.arena)
		b.arena = append(b.arena, body...)
		body = b.arena[start:len(b.arena):len(b.arena)]
	}
	b.bodies, b.index = append(b.bodies, body), append(b.index, i)
	if b.size += len(body); b.size >= decoderBatch {
		d.flush()
	}
}

// flush hands the batch to a worker, starting the workers with the first.
func (d *textDecoder) flush() {
	if len(d.batch.index) == 0 {
		return
	}
	if d.batches == nil {
		d.batches = make(chan textBatch, 4)
		d.arenas = make(chan []byte, 8)
		for range max(1, min(runtime.GOMAXPROCS(0)-1, 4)) { // the reader has a core of its own
			d.workers.Add(1)
			go func() {
				defer d.workers.Done()
				for b := range d.batches {
					d.decode(b)
				}
			}()
		}
	}
	select {
	case d.batches <- d.batch:
	default: // the workers are behind: the reader decodes this batch itself
		d.decode(d.batch)
	}
	d.batch = textBatch{}
}

// decode decodes b, offers its arena to the next batch (the texts are
// copies: nothing refers to it) and adds b to the decoded ones.
func (d *textDecoder) decode(b textBatch) {
	b.decode()
	if b.arena != nil {
		select {
		case d.arenas <- b.arena[:0]:
		default:
		}
	}
	b.arena, b.bodies = nil, nil
	d.mu.Lock()
	d.done = append(d.done, b)
	d.mu.Unlock()
}

func (b *textBatch) decode() {
	texts := persistence.RecordTexts(b.bodies)
	b.out = make([]recordText, len(texts))
	for k, t := range texts {
		b.out[k] = recordText{text: t.Text, from: t.From, err: t.Err, read: true}
	}
}

// results waits for every text added and returns them as texts 0..n-1
// (those never added not read).
func (d *textDecoder) results(n int) []recordText {
	if d.batches == nil {
		d.batch.decode() // a small read: no goroutines
		d.done = append(d.done, d.batch)
	} else {
		d.flush()
		close(d.batches)
		d.workers.Wait()
	}
	texts := make([]recordText, n)
	for _, b := range d.done {
		for k, i := range b.index {
			if i < n {
				texts[i] = b.out[k]
			}
		}
	}
	*d = textDecoder{kept: d.kept}
	return texts
}

// setTextAt points the rows of new messages whose text only their
// message_appended records keep (MessageRow.Ref) at those records, given
// the ids they were recorded with (recIDs[i] for rows[i]).
func (s *Store) setTextAt(ctx context.Context, tx conn, rows []MessageRow, ids, recIDs []int64) error {
	refIDs, offset, uniform := textAtOffset(rows, ids, recIDs)
	if len(refIDs) == 0 {
		return nil
	}
	if uniform { // the usual case: both numbered in the rows' order, one statement
		// By id alone: the rows were just inserted, and with session_id
		// SQLite would scan the session's rows for the ids.
		_, err := tx.Exec(ctx, `UPDATE messages SET content_at = CAST(seq + ? AS TEXT) WHERE {in_ids}`,
			offset, s.d.IDs(refIDs))
		return err
	}
	for i := range rows {
		if rows[i].Ref {
			if _, err := tx.Exec(ctx, `UPDATE messages SET content_at = ? WHERE id = ?`, textAt("", recIDs[i]), ids[i]); err != nil {
				return err
			}
		}
	}
	return nil
}

// textAtOffset returns the ids of the rows that refer to their records
// (ids[i] for rows[i], MessageRow.Ref), and whether each one's record id
// is its seq plus the same offset (recIDs[i] for rows[i]): then one
// statement sets them all. On PostgreSQL another session's insert may take
// an id between two of a write's.
func textAtOffset(rows []MessageRow, ids, recIDs []int64) (refIDs []int64, offset int64, uniform bool) {
	uniform = true
	for i := range rows {
		if !rows[i].Ref {
			continue
		}
		d := recIDs[i] - rows[i].Seq
		if len(refIDs) == 0 {
			offset = d
		}
		uniform = uniform && d == offset
		refIDs = append(refIDs, ids[i])
	}
	return refIDs, offset, uniform
}
