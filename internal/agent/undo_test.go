package agent

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/crow-acp/crow-acp/acp"
	"github.com/crow-acp/crow-acp/internal/checkpoint"
	"github.com/crow-acp/crow-acp/internal/persistence"
	"github.com/crow-acp/crow-acp/internal/provider"
	"github.com/crow-acp/crow-acp/internal/provider/fakemodel"
)

// fencedCheckpoints is the backend's fenced store: both interfaces.
type fencedCheckpoints interface {
	persistence.Store
	checkpoint.Store
}

// refusingCheckpoints is a checkpoint store whose SaveCheckpoint fails (a
// full disk).
type refusingCheckpoints struct{ fencedCheckpoints }

func (refusingCheckpoints) SaveCheckpoint(context.Context, *persistence.Checkpoint, []byte, persistence.CheckpointLimits) (bool, error) {
	return false, persistence.ErrStorageFull
}

type refusingBackend struct{ CheckpointStore }

func (r refusingBackend) WithFence(f persistence.Fence) persistence.Store {
	return refusingCheckpoints{r.CheckpointStore.WithFence(f).(fencedCheckpoints)}
}

func undoAgent(t *testing.T, cps func(CheckpointStore) CheckpointStore, replies ...fakemodel.Reply) (*Agent, *recorder, string, string) {
	t.Helper()
	store := newTestStore(t)
	m := fakemodel.Start()
	t.Cleanup(m.Close)
	m.Enqueue(replies...)
	rec := &recorder{}
	model := provider.NewOpenAI(provider.OpenAIConfig{BaseURL: m.URL(), APIKey: "sk-test"})
	a := New(rec, store, model, Config{Model: "m", DefaultMode: ModeBypass, Checkpoints: cps(store), CheckpointTrees: t.TempDir()}, nil)
	cwd := t.TempDir()
	if err := os.WriteFile(filepath.Join(cwd, "a.txt"), []byte("alpha\n"), 0o640); err != nil {
		t.Fatal(err)
	}
	s, err := a.NewSession(context.Background(), &acp.NewSessionRequest{Cwd: cwd})
	if err != nil {
		t.Fatal(err)
	}
	return a, rec, s.SessionID, cwd
}

var editAlpha = fakemodel.Reply{ToolCalls: []fakemodel.ToolCall{{ID: "e1", Name: "edit_file",
	Arguments: `{"path":"a.txt","old_string":"alpha","new_string":"omega"}`}}}

// TestUndoCommandRestoresTheEdit: a turn's edit is checkpointed and /undo
// puts the file back to its bytes and mode, and says so.
func TestUndoCommandRestoresTheEdit(t *testing.T) {
	same := func(c CheckpointStore) CheckpointStore { return c }
	a, rec, sid, cwd := undoAgent(t, same, editAlpha, fakemodel.Reply{Text: "done"})
	if res, err := prompt(a, sid, "rename alpha"); err != nil || res.StopReason != acp.StopEndTurn {
		t.Fatalf("prompt: %v %v", res, err)
	}
	file := filepath.Join(cwd, "a.txt")
	if b, _ := os.ReadFile(file); string(b) != "omega\n" {
		t.Fatalf("the edit did not run: %q", b)
	}
	if _, err := prompt(a, sid, "/undo"); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(file)
	fi, _ := os.Stat(file)
	if string(b) != "alpha\n" || fi.Mode().Perm() != 0o640 {
		t.Errorf("after /undo: %q %v", b, fi.Mode())
	}
	if text := rec.agentText(); !strings.Contains(text, "Undid prompt 1") || !strings.Contains(text, "restored a.txt") {
		t.Errorf("/undo's reply: %q", text)
	}
}

// TestUnsavedCheckpointFailsTheCall: when the checkpoint cannot be stored
// the tool changes nothing and the model is told why.
func TestUnsavedCheckpointFailsTheCall(t *testing.T) {
	refuse := func(c CheckpointStore) CheckpointStore { return refusingBackend{c} }
	a, _, sid, cwd := undoAgent(t, refuse, editAlpha, fakemodel.Reply{Text: "done"})
	if _, err := prompt(a, sid, "rename alpha"); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(filepath.Join(cwd, "a.txt")); string(b) != "alpha\n" {
		t.Errorf("the file changed without a checkpoint: %q", b)
	}
	msgs, err := a.store.Messages(context.Background(), sid, persistence.MessageFilter{})
	if err != nil {
		t.Fatal(err)
	}
	var result string
	for _, m := range msgs {
		if m.Role == persistence.RoleTool {
			result = m.Content
		}
	}
	if !strings.Contains(result, "a.txt was not changed: its checkpoint for undo could not be stored") {
		t.Errorf("tool result %q does not say the checkpoint failed", result)
	}
}

// TestRulesTableEscapes: a rule's key (a command line, a path: from the
// model's calls) stays text in one cell: pipes and backticks escaped,
// terminal controls shown.
func TestRulesTableEscapes(t *testing.T) {
	table := rulesTable([]persistence.PermissionRule{{ID: 7, Key: "command:echo `a` | tee \x1b[2Jx", Allow: true, SessionID: "sess_1"}})
	rows := strings.Split(strings.TrimSpace(table), "\n")
	if len(rows) != 3 {
		t.Fatalf("table:\n%s", table)
	}
	row := rows[2]
	if strings.Count(strings.ReplaceAll(row, `\|`, ""), "|") != 5 || strings.Contains(row, "\x1b") ||
		!strings.Contains(row, "\\`a\\`") || !strings.Contains(row, "always allow") || !strings.Contains(row, "sess\\_1") {
		t.Errorf("row %q", row)
	}
}
