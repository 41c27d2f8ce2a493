package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/crow-acp/crow-acp/acp"
	"github.com/crow-acp/crow-acp/persistence/persistencetest"
	"github.com/crow-acp/crow-acp/persistence/sqlite"
	"github.com/crow-acp/crow-acp/streaming/fakemodel"
)

// Files that change or are not what they seem under a running server: the
// database rewritten in place, the workspace's special files and git
// repositories.

// Issue 37 item 5: `cp backup.db crow.db` while an editor runs rewrites the
// database file in place (truncated, then written again) while a
// session/load reads it. The loads answer, results or errors, and the
// process lives on: a read that mapped the file would die of SIGBUS.
func TestDatabaseRewrittenDuringLoads(t *testing.T) {
	bin := testBinary(t)
	m := fakemodel.Start()
	t.Cleanup(m.Close)
	env, cwd := robustEnv(t, m.URL(), nil)
	db := env["CROW_DB"]
	if err := os.MkdirAll(filepath.Dir(db), 0o700); err != nil {
		t.Fatal(err)
	}
	store, err := sqlite.Open(context.Background(), db)
	if err != nil {
		t.Fatal(err)
	}
	if err := persistencetest.FillLongSession(context.Background(), store, "long", 10_000); err != nil {
		t.Fatal(err)
	}
	if err := store.Close(); err != nil {
		t.Fatal(err)
	}
	backup, err := os.ReadFile(db)
	if err != nil {
		t.Fatal(err)
	}

	p := startBinary(t, bin, env)
	p.initialize()
	p.load("long", cwd, nil) // the store is open
	stop := make(chan struct{})
	var copier sync.WaitGroup
	copier.Go(func() {
		for {
			select {
			case <-stop:
				return
			default:
			}
			// As cp does: the same file truncated, then written again.
			_ = os.WriteFile(db, backup, 0o600)
		}
	})
	answered, failed := 0, 0
	for start := time.Now(); time.Since(start) < 8*time.Second || answered < 3; {
		_, err := p.LoadSession(p.ctx(), &acp.LoadSessionRequest{SessionID: "long", Cwd: cwd, McpServers: []acp.McpServer{}})
		var rpc *acp.Error
		switch {
		case err == nil:
			answered++
		case errors.As(err, &rpc):
			answered++
			failed++
		default:
			close(stop)
			copier.Wait()
			t.Fatalf("session/load while the database file was rewritten: %v (the process died?)\n%s", err, crashOf(p.stderr.String()))
		}
	}
	close(stop)
	copier.Wait()
	t.Logf("%d loads answered while the file was rewritten, %d of them errors", answered, failed)
	if _, err := p.Initialize(p.ctx(), &acp.InitializeRequest{ProtocolVersion: acp.ProtocolVersion}); err != nil {
		t.Fatalf("the process stopped answering: %v\n%s", err, crashOf(p.stderr.String()))
	}
	p.exit(t)
}

// crashOf is the line of a process's stderr that says how it crashed
// (SIGBUS: bus error, fatal error: ..., panic: ...), or its last lines.
func crashOf(stderr string) string {
	for _, l := range strings.Split(stderr, "\n") {
		if strings.HasPrefix(l, "SIG") || strings.HasPrefix(l, "fatal error:") || strings.HasPrefix(l, "panic:") {
			return l
		}
	}
	if len(stderr) > 2000 {
		stderr = "…" + stderr[len(stderr)-2000:]
	}
	return stderr
}

// Issue 37 item 3: an AGENTS.md that is a FIFO nobody writes stalled the
// connection for good (the open blocked on the request path, and closing
// stdin did not end the process). Now it is passed over: the session opens,
// the next request of another session is answered, the folder's next
// instruction file is what the model is told, and the process ends when
// stdin closes.
func TestInstructionFileFIFO(t *testing.T) {
	bin := testBinary(t)
	m := fakemodel.Start()
	t.Cleanup(m.Close)
	m.SetFallback(fakemodel.Reply{Text: "ok"})
	env, cwd := robustEnv(t, m.URL(), nil)
	if err := syscall.Mkfifo(filepath.Join(cwd, "AGENTS.md"), 0o644); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	if err := os.WriteFile(filepath.Join(cwd, "CLAUDE.md"), []byte("Use tabs, not spaces."), 0o644); err != nil {
		t.Fatal(err)
	}
	p := startBinary(t, bin, env)
	p.initialize()
	sid := p.newSession(cwd)
	p.newSession(t.TempDir()) // the connection was stalled here
	p.stopReason(sid, "hi")
	if sys := systemPrompt(t, m.Requests()[0]); !strings.Contains(sys, "Instructions from CLAUDE.md:\nUse tabs, not spaces.") {
		t.Errorf("the system prompt lacks CLAUDE.md:\n%s", sys)
	}
	p.exit(t)
}

// Issue 38 item 7: in a git repository the full prompt tells the branch
// and the uncommitted changes. git ran with the session/new request's
// context after it was answered, so it never ran, and the prompt said
// "Git status: unknown (git status failed)" for the whole session.
func TestPromptGitFacts(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not installed")
	}
	m := fakemodel.Start()
	t.Cleanup(m.Close)
	m.SetFallback(fakemodel.Reply{Text: "ok"})
	env, cwd := robustEnv(t, m.URL(), map[string]string{"CROW_CONTEXT_WINDOW": "200000"})
	gitEnv := append(os.Environ(), "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@t", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@t")
	for _, step := range []func() error{
		func() error { return os.WriteFile(filepath.Join(cwd, "tracked.txt"), []byte("one\n"), 0o644) },
		func() error { return gitIn(cwd, gitEnv, "init", "-q", "-b", "feature/prompt-facts") },
		func() error { return gitIn(cwd, gitEnv, "add", "tracked.txt") },
		func() error { return gitIn(cwd, gitEnv, "commit", "-q", "-m", "one") },
		func() error { return os.WriteFile(filepath.Join(cwd, "tracked.txt"), []byte("two\n"), 0o644) },
		func() error { return os.WriteFile(filepath.Join(cwd, "new.txt"), []byte("new\n"), 0o644) },
	} {
		if err := step(); err != nil {
			t.Fatal(err)
		}
	}
	c := startInProcess(t, env)
	c.initialize()
	sid := c.newSession(cwd)
	c.stopReason(sid, "what changed?")
	sys := systemPrompt(t, m.Requests()[0])
	for _, want := range []string{"- Branch: feature/prompt-facts", "\n     M tracked.txt\n", "\n    ?? new.txt\n"} {
		if !strings.Contains(sys, want) {
			t.Errorf("the system prompt lacks %q:\n%s", want, sys)
		}
	}
}

func gitIn(dir string, env []string, args ...string) error {
	cmd := exec.Command("git", args...)
	cmd.Dir, cmd.Env = dir, env
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("git %v: %v\n%s", args, err, out)
	}
	return nil
}

// systemPrompt is the system message of a model request.
func systemPrompt(t *testing.T, body []byte) string {
	t.Helper()
	var req struct {
		Messages []struct{ Role, Content string }
	}
	if err := json.Unmarshal(body, &req); err != nil || len(req.Messages) == 0 || req.Messages[0].Role != "system" {
		t.Fatalf("a request without a system prompt (%v): %s", err, body)
	}
	return req.Messages[0].Content
}
