package main

import (
	"context"
	"flag"
	"time"

	"github.com/crow-acp/crow-acp/cmd/crow-acp/internal/config"
	"github.com/crow-acp/crow-acp/cmd/crow-acp/internal/sessions"
)

// sessionsPruneFrames is the frame log's retention option
// (sessions.PruneFrames).
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
		return config.Usagef("sessions prune-frames: unexpected argument %q (see crow-acp sessions prune-frames --help)", pos[0])
	}
	if olderThan <= 0 {
		return config.Usagef("sessions prune-frames: --older-than is required and must be positive, e.g. --older-than 720h")
	}
	return sessions.PruneFrames(ctx, cfg, e.io(), olderThan)
}
