package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/crow-acp/crow-acp/acp"
	"github.com/crow-acp/crow-acp/cmd/crow-acp/internal/crowtest"
	"github.com/crow-acp/crow-acp/internal/persistence"
	"github.com/crow-acp/crow-acp/internal/provider/fakemodel"
)

// The ACP server in process, with settings of its own: limits, timeouts,
// an endpoint that is down, a bad database setting.

func TestPromptTooLargeIsRefusedAndNothingStored(t *testing.T) {
	m := fakemodel.Start()
	t.Cleanup(m.Close)
	env, cwd := crowtest.AgentEnv(t, m.URL(), map[string]string{"CROW_MAX_PROMPT_BYTES": "2048"})
	c := startInProcess(t, env)
	c.Init()
	sid := c.Session(cwd)
	_, err := c.Send(sid, strings.Repeat("x", 4096))
	e := crowtest.ErrorOf(t, err)
	if e.Code != -32602 || !strings.Contains(e.Message, "CROW_MAX_PROMPT_BYTES") || e.Data["limit"] != float64(2048) {
		t.Fatalf("want -32602 naming the limit, got %+v", e)
	}
	if n := len(m.Requests()); n != 0 {
		t.Fatalf("the model was called %d times for a refused prompt", n)
	}
	// Nothing was stored, and a prompt within the limit works.
	replayed := 0
	c.Load(sid, cwd, func(n *acp.SessionNotification) {
		if n.Update.UserMessageChunk != nil {
			replayed++
		}
	})
	if replayed != 0 {
		t.Fatalf("the refused prompt was stored (%d user chunks replayed)", replayed)
	}
	c.StopReason(sid, strings.Repeat("y", 1000))
}

func TestActiveSessionsLimit(t *testing.T) {
	m := fakemodel.Start()
	t.Cleanup(m.Close)
	m.Enqueue(fakemodel.Reply{Text: "slow one two three", StallAfter: 1}, fakemodel.Reply{Text: "second"})
	env, cwd := crowtest.AgentEnv(t, m.URL(), map[string]string{"CROW_MAX_CONCURRENT_SESSIONS": "1"})
	c := startInProcess(t, env)
	c.Init()
	s1, s2 := c.Session(cwd), c.Session(cwd)
	streaming := make(chan struct{})
	var once sync.Once
	c.Watch(func(n *acp.SessionNotification) {
		if crowtest.ChunkText(n) != "" {
			once.Do(func() { close(streaming) })
		}
	})
	first := make(chan *acp.PromptResponse, 1)
	go func() {
		res, err := c.Send(s1, "first")
		if err != nil {
			t.Errorf("first prompt: %v", err)
		}
		first <- res
	}()
	<-streaming // the first turn is streaming
	_, err := c.Send(s2, "second")
	e := crowtest.ErrorOf(t, err)
	if e.Code != -32600 || !strings.Contains(e.Message, "CROW_MAX_CONCURRENT_SESSIONS") || e.Data["limit"] != float64(1) {
		t.Fatalf("want -32600 naming the limit, got %+v", e)
	}
	if err := c.Cancel(c.Ctx(), &acp.CancelNotification{SessionID: s1}); err != nil {
		t.Fatal(err)
	}
	if r := <-first; r == nil || r.StopReason != acp.StopCancelled {
		t.Fatalf("first prompt: %+v", r)
	}
	if r := c.StopReason(s2, "second again"); r != acp.StopEndTurn {
		t.Fatalf("second session after the first finished: %s", r)
	}
}

func TestEndpointDownThenUp(t *testing.T) {
	// A port nobody listens on: take a free one and close it.
	m := fakemodel.Start()
	url := m.URL()
	m.Close()
	env, cwd := crowtest.AgentEnv(t, url, nil)
	c := startInProcess(t, env)
	c.Init()
	sid := c.Session(cwd)
	_, err := c.Send(sid, "anyone there?")
	e := crowtest.ErrorOf(t, err)
	if e.Code != -32603 || !strings.Contains(e.Message, "could not reach the model endpoint") ||
		e.Data["retryable"] != true || !strings.Contains(e.Message, "after 4 attempts") {
		t.Fatalf("want -32603 after 4 attempts saying the endpoint is unreachable, got %+v", e)
	}
	// The server keeps serving and the session keeps its prompt.
	replayed := ""
	c.Load(sid, cwd, func(n *acp.SessionNotification) { replayed += crowtest.UserText(n) })
	if !strings.Contains(replayed, "anyone there?") {
		t.Fatalf("the prompt was not kept: %s", replayed)
	}
}

func TestStalledStreamHitsIdleTimeout(t *testing.T) {
	m := fakemodel.Start()
	t.Cleanup(m.Close)
	m.Enqueue(fakemodel.Reply{Text: "start of an answer", StallAfter: 2}, fakemodel.Reply{Text: "fresh"})
	env, cwd := crowtest.AgentEnv(t, m.URL(), map[string]string{"CROW_MODEL_IDLE_TIMEOUT": "300ms"})
	c := startInProcess(t, env)
	c.Init()
	sid := c.Session(cwd)
	var shown strings.Builder
	start := time.Now()
	var err error
	c.WithUpdates(func(n *acp.SessionNotification) { shown.WriteString(crowtest.ChunkText(n)) }, func() { _, err = c.Send(sid, "go") })
	e := crowtest.ErrorOf(t, err)
	if e.Code != -32603 || !strings.Contains(e.Message, "sent nothing") || e.Data["partial"] != true {
		t.Fatalf("want -32603 for an idle stream with the partial reply kept, got %+v", e)
	}
	if time.Since(start) > 15*time.Second {
		t.Fatalf("the idle timeout did not end the stall")
	}
	if shown.String() != "start of " {
		t.Fatalf("client saw %q", shown.String())
	}
	if len(m.Requests()) != 1 {
		t.Fatalf("a stream that had shown text was retried (%d requests)", len(m.Requests()))
	}
	if r := c.StopReason(sid, "again"); r != acp.StopEndTurn {
		t.Fatalf("session not usable after the timeout: %s", r)
	}
	var req struct {
		Messages []struct{ Role, Content string }
	}
	_ = json.Unmarshal(m.Requests()[1], &req)
	if n := len(req.Messages); n < 2 || req.Messages[n-2].Content != "start of " {
		t.Fatalf("the partial reply is not in the next request's context: %+v", req.Messages)
	}
}

func TestDebugStats(t *testing.T) {
	m := fakemodel.Start()
	t.Cleanup(m.Close)
	env, _ := crowtest.AgentEnv(t, m.URL(), nil)
	c := startInProcess(t, env)
	c.Init()
	var st struct {
		Goroutines     int
		HeapAllocBytes uint64
		RunningTurns   int
	}
	if err := c.Call(c.Ctx(), "_crow/debug/stats", struct{}{}, &st); err != nil {
		t.Fatal(err)
	}
	if st.Goroutines < 2 || st.HeapAllocBytes == 0 || st.RunningTurns != 0 {
		t.Fatalf("implausible stats %+v", st)
	}
}

func TestModelCallsPerTurnCap(t *testing.T) {
	m := fakemodel.Start()
	t.Cleanup(m.Close)
	// A model that never stops calling tools.
	m.SetFallback(fakemodel.Reply{ToolCalls: []fakemodel.ToolCall{{ID: "", Name: "loop", Arguments: "{}"}}})
	env, cwd := crowtest.AgentEnv(t, m.URL(), map[string]string{"CROW_MAX_MODEL_CALLS": "3"})
	c := startInProcess(t, env)
	c.Init()
	sid := c.Session(cwd)
	if r := c.StopReason(sid, "loop forever"); r != acp.StopMaxTurnRequests {
		t.Fatalf("want stopReason max_turn_requests, got %s", r)
	}
	if n := len(m.Requests()); n != 3 {
		t.Fatalf("%d model requests, want exactly the cap of 3", n)
	}
	// The session goes on.
	m.SetFallback(fakemodel.Reply{Text: "done"})
	if r := c.StopReason(sid, "stop"); r != acp.StopEndTurn {
		t.Fatalf("after the cap: %s", r)
	}
}

// TestRefusedPromptLeavesOnlyAMarker: a prompt refused as too large leaves
// its size and digest in the frame log, never its body (issue 14, case 4:
// five refused 30 MiB prompts grew the database by 180 MiB).
func TestRefusedPromptLeavesOnlyAMarker(t *testing.T) {
	m := fakemodel.Start()
	t.Cleanup(m.Close)
	env, cwd := crowtest.AgentEnv(t, m.URL(), map[string]string{"CROW_MAX_PROMPT_BYTES": "4096"})
	c := startInProcess(t, env)
	c.Init()
	sid := c.Session(cwd)
	body := strings.Repeat("refused-body ", 80<<10) // 1 MiB
	for range 5 {
		if _, err := c.Send(sid, body); crowtest.ErrorOf(t, err).Code != -32602 {
			t.Fatalf("want -32602, got %v", err)
		}
	}
	c.StopReason(sid, "a prompt within the limit")
	// Every frame before a response is committed: the files hold them now.
	var size int64
	for _, f := range []string{env["CROW_DB"], env["CROW_DB"] + "-wal"} {
		b, err := os.ReadFile(f)
		if err != nil && !os.IsNotExist(err) {
			t.Fatal(err)
		}
		size += int64(len(b))
		if bytes.Contains(b, []byte("refused-body refused-body")) {
			t.Fatalf("%s holds the body of a refused prompt", f)
		}
	}
	if size > 4<<20 {
		t.Fatalf("the database is %d bytes after five refused 1 MiB prompts", size)
	}
	evs := crowtest.Events(t, env["CROW_DB"], sid)
	markers, kept := 0, 0
	for _, ev := range evs {
		if ev.Method != "session/prompt" || ev.Kind != persistence.EventRequest {
			continue
		}
		var f struct {
			Omitted struct {
				Bytes  int
				SHA256 string
			}
		}
		fs, err := ev.Frames(persistence.NewBudget(persistence.MaxDecoded))
		if err != nil {
			t.Fatal(err)
		}
		frame := bytes.Join(fs, []byte("\n"))
		_ = json.Unmarshal(frame, &f)
		switch {
		case f.Omitted.Bytes > len(body) && len(f.Omitted.SHA256) == 64:
			markers++
		case strings.Contains(string(frame), "a prompt within the limit"):
			kept++
		}
	}
	if markers != 5 || kept != 1 {
		t.Fatalf("%d markers for 5 refused prompts, %d of 1 accepted prompt kept whole", markers, kept)
	}
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
	env, cwd := crowtest.AgentEnv(t, m.URL(), map[string]string{"CROW_CONTEXT_WINDOW": "200000"})
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
	c.Init()
	sid := c.Session(cwd)
	c.StopReason(sid, "what changed?")
	sys := crowtest.SystemPrompt(t, m.Requests()[0])
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

// TestDatabaseSettingErrors: a store that cannot be used is a clear error at
// start-up, naming what is wrong and never the password.
func TestDatabaseSettingErrors(t *testing.T) {
	for _, c := range []struct {
		db   string
		code int
		want []string
	}{
		{"mysql://crow:hunter2@db.example/crow", exitUsage, []string{"CROW_DB", `unsupported database URL scheme "mysql"`}},
		// Nothing listens on port 1 of the loopback.
		{"postgres://crow:hunter2@127.0.0.1:1/crow?connect_timeout=5", exitError,
			[]string{"cannot open the session database postgres://crow:xxxxx@127.0.0.1:1/crow", "cannot connect", "connection refused"}},
		{"postgresql://crow:hunter2@127.0.0.1:notaport/crow", exitError, []string{"invalid URL", "invalid port"}},
	} {
		code, stdout, out := commandLines(map[string]string{"CROW_DB": c.db, "OPENAI_API_KEY": "sk-x"})()
		if code != c.code {
			t.Errorf("CROW_DB=%s: exit code %d, want %d (stderr %q)", c.db, code, c.code, out)
		}
		if strings.Contains(out, "hunter2") || strings.Contains(stdout, "hunter2") {
			t.Errorf("CROW_DB=%s: the password was printed: %s", c.db, out)
		}
		for _, w := range c.want {
			if !strings.Contains(out, w) {
				t.Errorf("CROW_DB=%s: stderr %q does not mention %q", c.db, out, w)
			}
		}
		if stdout != "" {
			t.Errorf("CROW_DB=%s: wrote %q to stdout, which carries ACP frames only", c.db, stdout)
		}
	}
}

// BenchmarkTurn measures one prompt turn in-process (pipes, real SQLite
// file, fake model on loopback) with the benchmark reply of issue 2:
// 200 chunks of 20 characters.
func BenchmarkTurn(b *testing.B) {
	m := fakemodel.Start()
	defer m.Close()
	m.SetFallback(fakemodel.Reply{Text: strings.Repeat("abcdefghijklmnopqrs ", 200), Chunks: 200})
	dir := b.TempDir()
	vars := map[string]string{"OPENAI_BASE_URL": m.URL(), "CROW_MODEL": "bench", "CROW_DB": filepath.Join(dir, "bench.db"), "CROW_LOG_LEVEL": "error"}
	in, out := runInProcess(b, vars)
	c := acp.NewClientConn(out, in, nil, acp.Options{})
	defer c.Close()
	ctx := context.Background()
	if _, err := c.Initialize(ctx, &acp.InitializeRequest{ProtocolVersion: acp.ProtocolVersion}); err != nil {
		b.Fatal(err)
	}
	var sid string
	newSession := func() {
		s, err := c.NewSession(ctx, &acp.NewSessionRequest{Cwd: dir, McpServers: []acp.McpServer{}})
		if err != nil {
			b.Fatal(err)
		}
		sid = s.SessionID
	}
	newSession()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		// A fresh session every 5 turns, as in crow-bench: the context
		// does not grow with b.N.
		if i > 0 && i%5 == 0 {
			b.StopTimer()
			newSession()
			b.StartTimer()
		}
		if _, err := c.Prompt(ctx, &acp.PromptRequest{SessionID: sid, Prompt: []acp.ContentBlock{acp.TextBlock("go")}}); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
}
