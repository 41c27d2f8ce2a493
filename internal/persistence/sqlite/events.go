package sqlite

import (
	"context"
	"fmt"
	"math/bits"

	"github.com/crow-acp/crow-acp/internal/persistence"
	"github.com/crow-acp/crow-acp/internal/persistence/internal/sqlcore"
)

// Events are inserted in chunks: runs of consecutive events that agree on
// the six columns a frame shares with its neighbours (a turn's streamed
// updates all do), cut into lengths that are powers of two up to 64. One
// multi-row INSERT costs far less than as many single-row ones (one step,
// one AUTOINCREMENT update, one trip through database/sql), and binding the
// shared columns once per chunk (?1 to ?6, which every row repeats) saves
// two thirds of the per-row binds. The seven texts are constants, so no
// value can reach the SQL, and stay prepared in the statement cache.
const (
	insertEvent = `INSERT INTO events (stream_id, connection_stream_id, direction, turn, kind, method, seq, at, body) VALUES `
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

// insertEvents inserts evs inside the transaction of c with the seqs and
// times of out (checked in range by the caller) and fills out's ids.
func insertEvents(ctx context.Context, c sqlcore.Conn, evs []*persistence.Event, out []sqlcore.EventRow) error {
	tx := sqlcore.TxOf(c)
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
		args = append(args[:0], out[i].StreamID, out[i].ConnectionStreamID, string(e.Direction), e.Turn, string(e.Kind), e.Method)
		for j := i; j < i+n; j++ {
			body := evs[j].Body
			if body == nil {
				body = []byte{}
			}
			args = append(args, out[j].Seq, out[j].At.UnixNano(), body)
		}
		res, err := tx.ExecContext(ctx, q, args...)
		if err != nil {
			return fmt.Errorf("events %d to %d: %w", i, i+n-1, err)
		}
		// One statement inserts its rows in VALUES order, and AUTOINCREMENT
		// gives each row one more than the largest id ever used (events has
		// no insert triggers, and we hold the write lock), so the chunk's
		// ids are the n ids ending at the last one inserted.
		last, err := res.LastInsertId()
		if err != nil {
			return err
		}
		if got, err := res.RowsAffected(); err != nil || got != int64(n) { // q and n disagree
			return fmt.Errorf("events %d to %d: %d rows inserted (%v)", i, i+n-1, got, err)
		}
		for j := range n {
			out[i+j].ID = last - int64(n-1-j)
		}
		i += n
	}
	return nil
}
