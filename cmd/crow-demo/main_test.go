package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/crow-acp/crow-acp/internal/fixture"
)

// TestMain removes the binary fixture.BuildBinary built.
func TestMain(m *testing.M) { fixture.Main(m) }

// TestDemo runs the whole demo against the built binary, so that `make
// demo` cannot rot: every step must succeed and say what it showed.
func TestDemo(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	bin := fixture.BuildBinary(t, "github.com/crow-acp/crow-acp/cmd/crow-acp")
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	var out bytes.Buffer
	if err := run(ctx, bin, &out, false); err != nil {
		t.Fatalf("demo failed: %v\n%s", err, out.String())
	}
	s := out.String()
	for _, want := range []string{
		"⚙ tool call  Read README.md [read]",
		"? permission  Write NOTES.md → the user picks",
		"✓ completed  Write NOTES.md",
		"assistant: It is parser-service",
		"compaction completed: Context compacted (summarize)",
		"exited cleanly after its stdin closed",
		"replayed  user:      What is this project?",
		"replayed  compaction completed",
		"the model's request was rebuilt from the database",
		"NOTES.md, written by the tool after permission was given",
		"$ crow-acp sessions list",
	} {
		if !strings.Contains(s, want) {
			t.Errorf("demo output lacks %q:\n%s", want, s)
		}
	}
}
