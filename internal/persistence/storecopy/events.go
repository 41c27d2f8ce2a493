package storecopy

import (
	"bytes"
	"context"
	"fmt"
	"time"

	"github.com/crow-acp/crow-acp/internal/persistence"
)

// isHistory reports whether migrate copies events of kind k: the frames as
// they crossed the wire and the lifecycle facts. Projection events are not
// copied: they name the source's message ids, and the destination's
// projection starts from the session_imported snapshot that ImportSession
// writes. A kind unknown here is not copied either.
func isHistory(k persistence.EventKind) bool {
	if k.IsFrame() {
		return true
	}
	switch k {
	case persistence.EventSessionCreated, persistence.EventSessionLoaded, persistence.EventSessionClosed,
		persistence.EventTurnStarted, persistence.EventTurnCompleted, persistence.EventTurnCancelled,
		persistence.EventTurnFailed, persistence.EventCompactionStarted, persistence.EventCompactionCompleted:
		return true
	}
	return false
}

// history returns the history events of a session's stream, in seq
// order, their bodies as stored (each reads back on its own).
func history(ctx context.Context, s Source, stream string) ([]persistence.Event, error) {
	var out []persistence.Event
	f := persistence.EventFilter{Limit: historyPage}
	for {
		page, err := s.Events(ctx, stream, f)
		if err != nil {
			return nil, err
		}
		for _, e := range page {
			if isHistory(e.Kind) {
				out = append(out, e)
			}
		}
		if len(page) < f.Limit {
			return out, nil
		}
		f.AfterSeq = page[len(page)-1].Seq
	}
}

// historyPage is how many events history reads at a time (a variable for
// tests).
var historyPage = 5000

// sameEvent compares what migrate copies; times to the microsecond.
func sameEvent(a, b persistence.Event) bool {
	return a.Kind == b.Kind && a.Direction == b.Direction && a.Turn == b.Turn && a.Method == b.Method &&
		a.ConnectionID == b.ConnectionID && bytes.Equal(a.Body, b.Body) &&
		a.At.Truncate(time.Microsecond).Equal(b.At.Truncate(time.Microsecond))
}

// copyEvents copies a session's history events that the destination does
// not have yet (all of them after an import; the rest after an interrupted
// run), then checks that the destination's history equals the source's. It
// returns how many history events the session has.
func copyEvents(ctx context.Context, dst Destination, src Source, stream string) (int, error) {
	want, err := history(ctx, src, stream)
	if err != nil {
		return 0, fmt.Errorf("read source events: %w", err)
	}
	have, err := history(ctx, dst, stream)
	if err != nil {
		return 0, fmt.Errorf("read destination events: %w", err)
	}
	if len(have) > len(want) {
		return 0, fmt.Errorf("the destination has %d events of the session, the source %d", len(have), len(want))
	}
	for i := range have {
		if !sameEvent(have[i], want[i]) {
			return 0, fmt.Errorf("the destination's event %d differs from the source's", i+1)
		}
	}
	const batch = 1000
	for start := len(have); start < len(want); start += batch {
		evs := make([]*persistence.Event, 0, batch)
		for _, e := range want[start:min(start+batch, len(want))] {
			evs = append(evs, &persistence.Event{Stream: stream, ConnectionID: e.ConnectionID, At: e.At,
				Direction: e.Direction, Turn: e.Turn, Kind: e.Kind, Method: e.Method, Body: e.Body})
		}
		if err := dst.AppendEvents(ctx, evs...); err != nil {
			return 0, fmt.Errorf("write destination events: %w", err)
		}
	}
	if have, err = history(ctx, dst, stream); err != nil {
		return 0, fmt.Errorf("read back events: %w", err)
	}
	if len(have) != len(want) {
		return 0, fmt.Errorf("verification failed: the destination reads back %d events, the source has %d", len(have), len(want))
	}
	for i := range have {
		if !sameEvent(have[i], want[i]) {
			return 0, fmt.Errorf("verification failed: event %d reads back different", i+1)
		}
	}
	return len(want), nil
}
