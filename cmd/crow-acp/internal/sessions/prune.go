package sessions

import (
	"context"
	"fmt"
	"time"

	"github.com/crow-acp/crow-acp/cmd/crow-acp/internal/config"
	"github.com/crow-acp/crow-acp/cmd/crow-acp/internal/transcript"
)

// PruneFrames is the frame log's retention option: it deletes raw frames
// recorded longer than olderThan ago. Lifecycle and projection events
// stay, so every session still loads and still verifies.
func PruneFrames(ctx context.Context, cfg *config.Settings, w IO, olderThan time.Duration) error {
	store, ok, err := OpenExisting(ctx, cfg)
	if err != nil {
		return err
	}
	if !ok {
		fmt.Fprintln(w.Out, "no database yet: nothing to prune")
		return nil
	}
	defer store.Close()
	cutoff := time.Now().Add(-olderThan)
	n, err := store.PruneEvents(ctx, cutoff)
	if err != nil {
		return fmt.Errorf("prune frames: %w", err)
	}
	fmt.Fprintf(w.Out, "deleted %d frames recorded before %s\n", n, transcript.LocalTime(cutoff))
	return nil
}
