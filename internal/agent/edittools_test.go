package agent

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/crow-acp/crow-acp/acp"
	"github.com/crow-acp/crow-acp/internal/provider/fakemodel"
)

// TestEitherEditToolRuns: a GPT model is offered apply_patch, not
// edit_file, but a call to edit_file (the tool a model of another
// lineage, or a GPT fine-tune, was trained on) still runs, and so does
// apply_patch for a model offered edit_file.
func TestEitherEditToolRuns(t *testing.T) {
	cases := []struct{ model, call, args string }{
		{"gpt-5", "edit_file", `{"path":"a.txt","old_string":"alpha","new_string":"omega"}`},
		{"qwen3-coder", "apply_patch", `{"input":"*** Begin Patch\n*** Update File: a.txt\n@@\n-alpha\n+omega\n*** End Patch"}`},
	}
	for _, c := range cases {
		t.Run(c.model, func(t *testing.T) {
			ctx := context.Background()
			a, _, _ := newTestAgent(t, Config{Model: c.model, DefaultMode: ModeBypass},
				fakemodel.Reply{ToolCalls: []fakemodel.ToolCall{{ID: "r1", Name: "read_file", Arguments: `{"path":"a.txt"}`}}},
				fakemodel.Reply{ToolCalls: []fakemodel.ToolCall{{ID: "e1", Name: c.call, Arguments: c.args}}},
				fakemodel.Reply{Text: "done"})
			cwd := t.TempDir()
			file := filepath.Join(cwd, "a.txt")
			if err := os.WriteFile(file, []byte("alpha\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			s, err := a.NewSession(ctx, &acp.NewSessionRequest{Cwd: cwd})
			if err != nil {
				t.Fatal(err)
			}
			if res, err := prompt(a, s.SessionID, "rename alpha"); err != nil || res.StopReason != acp.StopEndTurn {
				t.Fatalf("prompt: %v %v", res, err)
			}
			got, _ := os.ReadFile(file)
			if string(got) != "omega\n" {
				t.Fatalf("%s as %s: file is %q, want the edit applied", c.call, c.model, got)
			}
		})
	}
}
