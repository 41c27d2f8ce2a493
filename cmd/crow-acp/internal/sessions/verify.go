package sessions

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"

	"github.com/crow-acp/crow-acp/cmd/crow-acp/internal/config"
	"github.com/crow-acp/crow-acp/internal/persistence"
	"github.com/crow-acp/crow-acp/internal/persistence/projection"
	"github.com/crow-acp/crow-acp/internal/termsafe"
)

// Verify rebuilds a session's messages and compactions from its event log
// and compares them with the live tables.
func Verify(ctx context.Context, cfg *config.Settings, w IO, id string) error {
	store, err := openFound(ctx, cfg, id)
	if err != nil {
		return err
	}
	defer store.Close()
	r, err := projection.Verify(ctx, store, id)
	if err != nil {
		return fmt.Errorf("verify %s: %w", id, err)
	}
	if r.OK() {
		fmt.Fprintf(w.Out, "%s: ok: %d messages rebuilt from %d events (%d frames)\n", termsafe.Line(id), r.Messages, r.Events, r.Frames)
		if r.Pruned > 0 {
			fmt.Fprintf(w.Out, "%s: %d of them streamed text whose frames were pruned: their text is not compared\n", termsafe.Line(id), r.Pruned)
		}
		return nil
	}
	for _, d := range r.Differences {
		fmt.Fprintf(w.Out, "%s: %s\n", termsafe.Line(id), termsafe.Line(fmt.Sprint(d)))
	}
	return fmt.Errorf("%s: %d differences between the messages table and the event log", id, len(r.Differences))
}

// Rebuild prints the messages rebuilt from a session's event log.
func Rebuild(ctx context.Context, cfg *config.Settings, w IO, id string) error {
	store, err := openFound(ctx, cfg, id)
	if err != nil {
		return err
	}
	defer store.Close()
	st, _, err := projection.Load(ctx, store, id)
	if err != nil {
		return err
	}
	// Stored model text: the exact value, with what a terminal would act
	// on written as \u escapes.
	var line bytes.Buffer
	enc := json.NewEncoder(&line)
	for _, m := range st.Messages {
		if st.Pruned[m.ID] {
			fmt.Fprintf(w.Err, "message seq %d: its streamed text was pruned with its frames (the messages table has it)\n", m.Seq)
		}
		line.Reset()
		if err := enc.Encode(persistence.RecordOf(&m)); err != nil {
			return err
		}
		if _, err := w.Out.Write(termsafe.JSON(line.Bytes())); err != nil {
			return err
		}
	}
	return nil
}
