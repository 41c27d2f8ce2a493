package checkpoint_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/crow-acp/crow-acp/internal/checkpoint"
	"github.com/crow-acp/crow-acp/internal/persistence/sqlite"
)

// TestUndoKilledChild is the process TestUndoKilled kills: it undoes and
// stops after the second file, until killed.
func TestUndoKilledChild(t *testing.T) {
	db := os.Getenv("CROW_UNDO_CHILD_DB")
	if db == "" {
		t.Skip("run by TestUndoKilled")
	}
	turn, _ := strconv.ParseInt(os.Getenv("CROW_UNDO_CHILD_TURN"), 10, 64)
	s, err := sqlite.Open(context.Background(), db)
	must(t, err)
	marker := os.Getenv("CROW_UNDO_CHILD_MARKER")
	_, err = checkpoint.Undo(context.Background(), s, "s1", turn, checkpoint.Options{AfterFile: func(i int, _ string) {
		if i == 1 {
			must(t, os.WriteFile(marker, []byte("paused"), 0o644))
			time.Sleep(time.Minute)
		}
	}})
	t.Fatalf("the undo was not killed: %v", err)
}

// TestUndoKilled: a kill -9 in the middle of an undo leaves each file
// either as the turn left it or as it was before, the conversation as it
// was, and a report of the interrupted undo at the next start; undoing
// again finishes the job.
func TestUndoKilled(t *testing.T) {
	e := newEnv(t, "")
	names := []string{"f0.txt", "f1.txt", "f2.txt", "f3.txt", "f4.txt"}
	old := func(n string) string { return "old " + n + "\n" }
	changed := func(n string) string { return "new " + n + "\n" }
	for _, n := range names {
		write(t, e.path(n), old(n), 0o644)
	}
	turn := e.prompt("edit all")
	for _, n := range names {
		e.toolWrite(turn, n, changed(n), 0o644)
	}
	e.reply()
	must(t, e.store.Close())
	e.store = nil

	marker := filepath.Join(t.TempDir(), "paused")
	cmd := exec.Command(os.Args[0], "-test.run=^TestUndoKilledChild$", "-test.count=1")
	cmd.Env = append(os.Environ(), "CROW_UNDO_CHILD_DB="+e.dbPath, "CROW_UNDO_CHILD_MARKER="+marker,
		fmt.Sprintf("CROW_UNDO_CHILD_TURN=%d", turn))
	var out strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &out
	must(t, cmd.Start())
	deadline := time.Now().Add(30 * time.Second)
	for {
		if _, err := os.Stat(marker); err == nil {
			break
		}
		if time.Now().After(deadline) {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
			t.Fatalf("the child never paused:\n%s", out.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	must(t, cmd.Process.Signal(syscall.SIGKILL))
	_ = cmd.Wait()

	restored := 0
	for _, n := range names {
		b, err := os.ReadFile(e.path(n))
		must(t, err)
		switch string(b) {
		case old(n):
			restored++
		case changed(n):
		default:
			t.Errorf("%s is neither old nor new: %q", n, b)
		}
	}
	if restored != 2 {
		t.Errorf("%d files restored before the kill, want 2", restored)
	}
	ents, _ := os.ReadDir(e.sess.Cwd)
	for _, d := range ents {
		if strings.HasPrefix(d.Name(), ".crow-undo-") {
			t.Logf("a temporary file stays after the kill: %s", d.Name())
		}
	}

	e.open() // the next start
	reps, err := checkpoint.PendingUndos(t.Context(), e.store, "s1")
	must(t, err)
	if len(reps) != 1 || !reps[0].Interrupted {
		t.Fatalf("PendingUndos = %+v", reps)
	}
	text := reps[0].Text()
	if !strings.Contains(text, "interrupted undo") || strings.Count(text, "restored f") != 2 || strings.Count(text, "not reached") != 3 {
		t.Errorf("report:\n%s", text)
	}
	if seqs := activeSeqs(t, e.store, "s1"); len(seqs) != 2 {
		t.Errorf("an interrupted undo hid messages: %v", seqs)
	}
	if again, _ := checkpoint.PendingUndos(t.Context(), e.store, "s1"); len(again) != 0 {
		t.Errorf("reported twice: %+v", again)
	}
	rep, err := checkpoint.Undo(t.Context(), e.store, "s1", turn, e.opts())
	must(t, err)
	for _, n := range names {
		if b, _ := os.ReadFile(e.path(n)); string(b) != old(n) {
			t.Errorf("after the second undo %s = %q\n%s", n, b, rep.Text())
		}
	}
	if seqs := activeSeqs(t, e.store, "s1"); len(seqs) != 0 {
		t.Errorf("after the second undo active seqs %v", seqs)
	}
}
