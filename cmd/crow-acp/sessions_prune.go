package main

import (
	"context"
	"flag"
	"fmt"
	"time"

	"github.com/crow-acp/crow-acp/cmd/crow-acp/internal/transcript"
)

// sessionsPruneFrames is the frame log's retention option: it deletes raw
// frames older than a cut-off. Lifecycle and projection events stay, so
// every session still loads and still verifies.
func sessionsPruneFrames(ctx context.Context, e *env, args []string) error {
	var olderThan time.Duration
	pos, cfg, err := sessionFlags("prune-frames",
		"Usage: crow-acp sessions prune-frames --older-than DURATION\n\nDeletes the raw JSON-RPC frames recorded before now minus DURATION (e.g. 720h)\nfrom the event log of every session. Lifecycle and message events are kept:\nsessions still load and `sessions verify` still works. Nothing runs this\nautomatically.\n",
		args, e, func(fs *flag.FlagSet) {
			fs.DurationVar(&olderThan, "older-than", 0, "delete frames recorded longer ago than this (required, e.g. 720h)")
		})
	if err != nil {
		return err
	}
	if len(pos) > 0 {
		return usagef("sessions prune-frames: unexpected argument %q (see crow-acp sessions prune-frames --help)", pos[0])
	}
	if olderThan <= 0 {
		return usagef("sessions prune-frames: --older-than is required and must be positive, e.g. --older-than 720h")
	}
	store, ok, err := openExistingStore(ctx, cfg)
	if err != nil {
		return err
	}
	if !ok {
		fmt.Fprintln(e.std.out, "no database yet: nothing to prune")
		return nil
	}
	defer store.Close()
	cutoff := time.Now().Add(-olderThan)
	n, err := store.PruneEvents(ctx, cutoff)
	if err != nil {
		return fmt.Errorf("prune frames: %w", err)
	}
	fmt.Fprintf(e.std.out, "deleted %d frames recorded before %s\n", n, transcript.LocalTime(cutoff))
	return nil
}
