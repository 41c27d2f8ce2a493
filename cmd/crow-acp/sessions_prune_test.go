package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/crow-acp/crow-acp/internal/fixture"
	"github.com/crow-acp/crow-acp/persistence"
	"github.com/crow-acp/crow-acp/persistence/sqlite"
)

// prune-frames deletes old raw frames only: new frames and lifecycle events
// stay.
func TestSessionsPruneFrames(t *testing.T) {
	env := fixture.NewEnv(t)
	ctx := context.Background()
	store, err := sqlite.Open(ctx, env.DBPath)
	if err != nil {
		t.Fatal(err)
	}
	old := time.Now().Add(-48 * time.Hour).UTC()
	if err := store.CreateConnection(ctx, &persistence.Connection{ID: "conn_1", PID: 1, Host: "h"}); err != nil {
		t.Fatal(err)
	}
	frame := func(at time.Time) *persistence.Event {
		return &persistence.Event{ConnectionID: "conn_1", Stream: "conn_1", At: at, Direction: persistence.DirIn,
			Kind: persistence.EventNotification, Method: "session/cancel", Body: []byte(`{"jsonrpc":"2.0","method":"session/cancel","params":{"sessionId":"x"}}`)}
	}
	lifecycle := &persistence.Event{ConnectionID: "conn_1", Stream: "conn_1", At: old, Kind: persistence.EventSessionClosed, Body: []byte(`{}`)}
	if err := store.AppendEvents(ctx, frame(old), frame(old), lifecycle, frame(time.Now().UTC())); err != nil {
		t.Fatal(err)
	}
	store.Close()

	vars := map[string]string{"CROW_DB": env.DBPath, "XDG_CONFIG_HOME": env.Tmp}
	cli := func(args ...string) (int, string) {
		var out bytes.Buffer
		code := run(ctx, args, stdio{in: strings.NewReader(""), out: &out, err: &out}, func(k string) string { return vars[k] })
		return code, out.String()
	}
	if code, out := cli("sessions", "prune-frames"); code != exitUsage || !strings.Contains(out, "--older-than is required") {
		t.Fatalf("without --older-than: %d %s", code, out)
	}
	code, out := cli("sessions", "prune-frames", "--older-than", "24h")
	if code != exitOK || !strings.Contains(out, "deleted 2 frames") {
		t.Fatalf("prune: %d %s", code, out)
	}
	store, err = sqlite.Open(ctx, env.DBPath)
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	left, err := store.Events(ctx, "conn_1", persistence.EventFilter{})
	if err != nil {
		t.Fatal(err)
	}
	if len(left) != 2 || left[0].Kind != persistence.EventSessionClosed || left[1].Kind != persistence.EventNotification {
		t.Fatalf("after prune: %+v", left)
	}
}
