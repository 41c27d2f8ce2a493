package agent

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/crow-acp/crow-acp/acp"
	sysprompt "github.com/crow-acp/crow-acp/internal/agent/prompt"
	"github.com/crow-acp/crow-acp/internal/agent/request"
	"github.com/crow-acp/crow-acp/internal/agent/tool"
	"github.com/crow-acp/crow-acp/internal/compaction"
	"github.com/crow-acp/crow-acp/internal/persistence"
	"github.com/crow-acp/crow-acp/internal/provider"
	"github.com/crow-acp/crow-acp/internal/provider/fakemodel"
)

// requestMessages decodes a model request's messages.
func requestMessages(t *testing.T, body []byte) []struct {
	Role       string `json:"role"`
	Content    string `json:"content"`
	ToolCallID string `json:"tool_call_id"`
} {
	t.Helper()
	var req struct {
		Messages []struct {
			Role       string `json:"role"`
			Content    string `json:"content"`
			ToolCallID string `json:"tool_call_id"`
		} `json:"messages"`
	}
	if err := json.Unmarshal(body, &req); err != nil {
		t.Fatal(err)
	}
	return req.Messages
}

// systemOf is the system prompt a model request carried.
func systemOf(t *testing.T, body []byte) string {
	t.Helper()
	msgs := requestMessages(t, body)
	if len(msgs) == 0 || msgs[0].Role != "system" {
		t.Fatalf("request without a system prompt: %s", body)
	}
	return msgs[0].Content
}

// toolResultOf is the content of the result of call id in a request.
func toolResultOf(t *testing.T, body []byte, id string) string {
	t.Helper()
	for _, m := range requestMessages(t, body) {
		if m.Role == "tool" && m.ToolCallID == id {
			return m.Content
		}
	}
	t.Fatalf("no result for %s in %s", id, body)
	return ""
}

func lastRequest(m *fakemodel.Server) []byte {
	r := m.Requests()
	return r[len(r)-1]
}

func mustContain(t *testing.T, what, text string, want ...string) {
	t.Helper()
	for _, w := range want {
		if !strings.Contains(text, w) {
			t.Errorf("%s lacks %q:\n%s", what, w, text)
		}
	}
}

func mustNotContain(t *testing.T, what, text string, bad ...string) {
	t.Helper()
	for _, w := range bad {
		if strings.Contains(text, w) {
			t.Errorf("%s contains %q:\n%s", what, w, text)
		}
	}
}

// Issue 28 item 1: the model is told the workflow, in the tier of its
// window, and the facts of its session: date, OS and shell, project root,
// git, model and mode (plan mode included, so it does not find out by
// failing calls).
func TestSystemPromptTiersAndFacts(t *testing.T) {
	for _, c := range []struct {
		window    int
		tier      string
		has, lack string
	}{
		{2048, "minimal", "Read before you change; quote exact text", "How to work"},
		{6000, "compact", "How to work:", "# How to work"},
		{200000, "full", "# How to work", "How to work:"},
	} {
		t.Run(c.tier, func(t *testing.T) {
			a, _, m := newTestAgent(t, Config{Model: "local-coder", Models: []request.Model{{Name: "local-coder", ContextWindow: c.window}}})
			m.SetFallback(fakemodel.Reply{Text: "ok"})
			cwd := t.TempDir()
			s, err := a.NewSession(context.Background(), &acp.NewSessionRequest{Cwd: cwd})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := prompt(a, s.SessionID, "hi"); err != nil {
				t.Fatal(err)
			}
			sys := systemOf(t, lastRequest(m))
			mustContain(t, c.tier+" prompt", sys, c.has, "quote", "path:line", "ever undo",
				"- Date: "+testDay.Format("Monday 2006-01-02"), "- OS: "+runtime.GOOS, "shell: sh", "- Project root: "+cwd, "- Git: not a git repository",
				"- Model: local-coder", "- Mode: Ask before edits (default)")
			mustNotContain(t, c.tier+" prompt", sys, c.lack)

			if _, err := a.SetSessionMode(context.Background(), &acp.SetSessionModeRequest{SessionID: s.SessionID, ModeID: ModePlan}); err != nil {
				t.Fatal(err)
			}
			if _, err := prompt(a, s.SessionID, "plan it"); err != nil {
				t.Fatal(err)
			}
			mustContain(t, "plan-mode prompt", systemOf(t, lastRequest(m)), "- Mode: Read-only planning (plan)", "edits and commands are refused", "Do not try to edit files or run commands")
		})
	}
}

// TestPromptDateFromConfigClock: the prompt's date is the configured
// clock's, not the machine's.
func TestPromptDateFromConfigClock(t *testing.T) {
	day := time.Date(2031, time.January, 2, 23, 0, 0, 0, time.UTC)
	a, _, m := newTestAgent(t, Config{Model: "m", Now: func() time.Time { return day }})
	m.SetFallback(fakemodel.Reply{Text: "ok"})
	s, err := a.NewSession(context.Background(), &acp.NewSessionRequest{Cwd: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := prompt(a, s.SessionID, "hi"); err != nil {
		t.Fatal(err)
	}
	mustContain(t, "prompt", systemOf(t, lastRequest(m)), "- Date: Thursday 2031-01-02")
}

// fixedPrefix counts a tier's fixed prefix with the real counters of the
// compaction package, both OpenAI vocabularies (the larger), as the agent
// counts it for a model with that encoding; estimated is what the
// character estimator, used for models without a known vocabulary, counts.
func fixedPrefix(t *testing.T, window int) (fixed, system, estimated int) {
	a, _, _ := newTestAgent(t, Config{Model: "m", Models: []request.Model{{Name: "m", ContextWindow: window}}})
	s := &persistence.Session{ID: "s", Cwd: "/home/someone/src/github.com/example/a-fairly-long-project-name"}
	for _, enc := range []string{"o200k_base", "cl100k_base"} {
		c, err := compaction.NewCounter("", enc)
		if err != nil {
			t.Fatal(err)
		}
		fixed = max(fixed, compaction.FixedTokens(c, a.build.SystemPrompt(&a.sessions.get(s.ID).req, s), a.turns.toolDefinitions(a.sessions.get(s.ID), s)))
		system = max(system, compaction.FixedTokens(c, a.build.SystemPrompt(&a.sessions.get(s.ID).req, s), nil))
	}
	return fixed, system, compaction.FixedTokens(compaction.Estimator{}, a.build.SystemPrompt(&a.sessions.get(s.ID).req, s), a.turns.toolDefinitions(a.sessions.get(s.ID), s))
}

// The budgets of issue 28: below 32k the whole fixed prefix (prompt and
// tool schemas) stays within 1,536 tokens; the full prompt within 4,096.
func TestFixedPrefixPerTier(t *testing.T) {
	fixed, system, est := fixedPrefix(t, 6000)
	t.Logf("compact tier: prompt %d tokens, with tool schemas %d (estimator: %d)", system, fixed, est)
	if fixed > 1536 {
		t.Errorf("compact tier: the fixed prefix takes %d tokens, over 1,536", fixed)
	}
	fixed, system, est = fixedPrefix(t, 200000)
	t.Logf("full tier: prompt %d tokens, with tool schemas %d (estimator: %d)", system, fixed, est)
	if system > 4096 {
		t.Errorf("full tier: the prompt takes %d tokens, over 4,096", system)
	}
}

// A git status that changes between requests does not change the prompt:
// it is a cached prefix. The full tier shows the branch and a capped status.
func TestSystemPromptGitStableAcrossRequests(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not installed")
	}
	cwd := t.TempDir()
	git := exec.Command("git", "init", "-q", "-b", "trunk", cwd)
	if out, err := git.CombinedOutput(); err != nil {
		t.Skipf("git init: %v %s", err, out)
	}
	for i := range 25 {
		writeFile(t, filepath.Join(cwd, "file"+string(rune('a'+i))+".txt"), "x")
	}
	a, _, m := newTestAgent(t, Config{Model: "big", Models: []request.Model{{Name: "big", ContextWindow: 200000}}})
	m.SetFallback(fakemodel.Reply{Text: "ok"})
	s, err := a.NewSession(context.Background(), &acp.NewSessionRequest{Cwd: cwd})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := prompt(a, s.SessionID, "one"); err != nil {
		t.Fatal(err)
	}
	first := systemOf(t, lastRequest(m))
	mustContain(t, "full prompt", first, "- Git: a git repository", "- Branch: No commits yet on trunk", "?? filea.txt", "5 more not shown")
	if n := strings.Count(first, "\n    ?? "); n != sysprompt.StatusLines {
		t.Errorf("%d status lines shown, want %d", n, sysprompt.StatusLines)
	}
	writeFile(t, filepath.Join(cwd, "new.txt"), "y")
	if _, err := prompt(a, s.SessionID, "two"); err != nil {
		t.Fatal(err)
	}
	if second := systemOf(t, lastRequest(m)); second != first {
		t.Fatalf("the system prompt changed between requests of one session:\n%s\n---\n%s", first, second)
	}
}

func writeFile(t *testing.T, path, text string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
}

// Issue 28 item 1: the configuration replaces or extends the prompt, per
// model too.
func TestSystemPromptSettings(t *testing.T) {
	a, _, m := newTestAgent(t, Config{Model: "a", SystemPrompt: "GLOBAL BASE", SystemPromptAppend: "GLOBAL EXTRA",
		Models: []request.Model{{Name: "a"}, {Name: "b", SystemPrompt: "MODEL B BASE", SystemPromptAppend: "MODEL B EXTRA"}}})
	m.SetFallback(fakemodel.Reply{Text: "ok"})
	s, err := a.NewSession(context.Background(), &acp.NewSessionRequest{Cwd: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := prompt(a, s.SessionID, "hi"); err != nil {
		t.Fatal(err)
	}
	sys := systemOf(t, lastRequest(m))
	if !strings.HasPrefix(sys, "GLOBAL BASE\n\nGLOBAL EXTRA\n\n# Environment") {
		t.Errorf("configured prompt not in place:\n%s", sys)
	}
	mustNotContain(t, "replaced prompt", sys, "How to work", "MODEL B")
	if _, err := a.SetSessionConfigOption(context.Background(), &acp.SetSessionConfigOptionRequest{SessionID: s.SessionID, ConfigID: configModel, Value: json.RawMessage(`"b"`)}); err != nil {
		t.Fatal(err)
	}
	if _, err := prompt(a, s.SessionID, "again"); err != nil {
		t.Fatal(err)
	}
	sys = systemOf(t, lastRequest(m))
	if !strings.HasPrefix(sys, "MODEL B BASE\n\nGLOBAL EXTRA\n\nMODEL B EXTRA\n\n# Environment") {
		t.Errorf("model b's prompt not in place:\n%s", sys)
	}
}

// Issue 28 item 1: a client's systemPrompt (SDK 2.4, unstable) is applied
// on new, load and resume, kept with the session across a restart, and one
// the agent cannot apply is refused without creating the session.
func TestClientSystemPrompt(t *testing.T) {
	ctx := context.Background()
	store := newTestStore(t)
	m := fakemodel.Start()
	t.Cleanup(m.Close)
	m.SetFallback(fakemodel.Reply{Text: "ok"})
	model := provider.NewOpenAI(provider.OpenAIConfig{BaseURL: m.URL(), APIKey: "sk-test"})
	cfg := Config{Model: "m"}
	a := New(&recorder{}, store, model, cfg, nil)
	init, err := a.Initialize(ctx, &acp.InitializeRequest{ProtocolVersion: 1})
	if err != nil {
		t.Fatal(err)
	}
	if sp := init.AgentCapabilities.SessionCapabilities.SystemPrompt; sp == nil || sp.Mode == nil || sp.Mode.Override == nil {
		t.Fatalf("sessionCapabilities.systemPrompt with override not advertised: %+v", sp)
	}

	text := func(mode string, blocks ...acp.ContentBlock) *acp.SystemPrompt {
		return &acp.SystemPrompt{Mode: mode, Content: blocks}
	}
	for name, bad := range map[string]*acp.SystemPrompt{
		"unknown mode":   text("_replace_some", acp.TextBlock("x")),
		"future mode":    text("prepend", acp.TextBlock("x")),
		"image block":    text("append", acp.ContentBlock{Image: &acp.ImageContent{MimeType: "image/png", Data: "AAAA"}}),
		"empty override": text("override", acp.TextBlock("  ")),
	} {
		_, err := a.NewSession(ctx, &acp.NewSessionRequest{Cwd: t.TempDir(), SystemPrompt: bad})
		var e *acp.Error
		if !errors.As(err, &e) || e.Code != acp.CodeInvalidParams {
			t.Errorf("%s: error %v, want invalid params", name, err)
		}
	}
	if list, _ := a.ListSessions(ctx, &acp.ListSessionsRequest{}); len(list.Sessions) != 0 {
		t.Fatalf("a refused systemPrompt still created %d sessions", len(list.Sessions))
	}

	cwd := t.TempDir()
	s, err := a.NewSession(ctx, &acp.NewSessionRequest{Cwd: cwd, SystemPrompt: text("append", acp.TextBlock("CLIENT RULE ONE"), acp.TextBlock("CLIENT RULE TWO"))})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := prompt(a, s.SessionID, "hi"); err != nil {
		t.Fatal(err)
	}
	appended := systemOf(t, lastRequest(m))
	mustContain(t, "appended prompt", appended, "# How to work", "CLIENT RULE ONE\n\nCLIENT RULE TWO")

	// A restart: a new agent on the same store builds the same prompt
	// from what the session stored (load without systemPrompt keeps it).
	a.Close()
	a = New(&recorder{}, store, model, cfg, nil)
	defer a.Close()
	if _, err := a.LoadSession(ctx, &acp.LoadSessionRequest{SessionID: s.SessionID, Cwd: cwd}); err != nil {
		t.Fatal(err)
	}
	if _, err := prompt(a, s.SessionID, "after restart"); err != nil {
		t.Fatal(err)
	}
	if got := systemOf(t, lastRequest(m)); got != appended {
		t.Fatalf("after a restart and load the prompt differs:\n%s\n---\n%s", appended, got)
	}

	// Resume with an override: the built-in instructions are replaced, the
	// environment facts stay.
	if _, err := a.ResumeSession(ctx, &acp.ResumeSessionRequest{SessionID: s.SessionID, Cwd: cwd, SystemPrompt: text("override", acp.TextBlock("ONLY THE CLIENT'S"))}); err != nil {
		t.Fatal(err)
	}
	if _, err := prompt(a, s.SessionID, "after resume"); err != nil {
		t.Fatal(err)
	}
	sys := systemOf(t, lastRequest(m))
	if !strings.HasPrefix(sys, "ONLY THE CLIENT'S\n\n# Environment") {
		t.Errorf("override not applied:\n%s", sys)
	}
	mustNotContain(t, "overridden prompt", sys, "How to work", "CLIENT RULE")
	if _, err := a.ResumeSession(ctx, &acp.ResumeSessionRequest{SessionID: s.SessionID, Cwd: cwd, SystemPrompt: text("bogus", acp.TextBlock("x"))}); err == nil {
		t.Fatal("resume with an unsupported systemPrompt mode succeeded")
	}
}

// Issue 28 item 2: instruction files from the repository root down to the
// session directory are in the prompt (a peer's name where AGENTS.md is
// absent), the user is told which, and a link out of the workspace is not
// followed.
func TestProjectInstructions(t *testing.T) {
	root := t.TempDir()
	outside := t.TempDir()
	if err := os.Mkdir(filepath.Join(root, ".git"), 0o755); err != nil { // the repository root
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(root, "AGENTS.md"), "ROOT RULES: run make check.")
	writeFile(t, filepath.Join(root, "svc", "CLAUDE.md"), "SVC RULES: use zap.")
	writeFile(t, filepath.Join(root, "svc", "GEMINI.md"), "NOT READ: CLAUDE.md comes first.")
	writeFile(t, filepath.Join(outside, "AGENTS.md"), "SECRET OUTSIDE")
	if err := os.Symlink(filepath.Join(outside, "AGENTS.md"), filepath.Join(root, "svc", "AGENTS.md")); err != nil {
		t.Skip("symlinks:", err)
	}
	a, rec, m := newTestAgent(t, Config{Model: "m", Models: []request.Model{{Name: "m", ContextWindow: 200000}}})
	m.SetFallback(fakemodel.Reply{Text: "ok"})
	s, err := a.NewSession(context.Background(), &acp.NewSessionRequest{Cwd: filepath.Join(root, "svc")})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := prompt(a, s.SessionID, "hi"); err != nil {
		t.Fatal(err)
	}
	sys := systemOf(t, lastRequest(m))
	mustContain(t, "prompt", sys, "# Project instructions\n\nInstructions from AGENTS.md:\nROOT RULES: run make check.\n\nInstructions from svc/CLAUDE.md:\nSVC RULES: use zap.")
	mustNotContain(t, "prompt", sys, "SECRET OUTSIDE", "NOT READ")
	if got := instructionCards(rec); len(got) != 1 || got[0] != "Project instructions loaded: AGENTS.md, svc/CLAUDE.md" {
		t.Errorf("the user was told %q", got)
	}
}

func instructionCards(rec *recorder) []string {
	rec.mu.Lock()
	defer rec.mu.Unlock()
	var out []string
	for _, u := range rec.updates {
		if u.ToolCall != nil && strings.HasPrefix(u.ToolCall.Title, "Project instructions") {
			out = append(out, u.ToolCall.Title)
		}
	}
	return out
}

// Issue 28 item 2: the compact tier caps the instruction files and says so.
func TestProjectInstructionsCapped(t *testing.T) {
	cwd := t.TempDir()
	writeFile(t, filepath.Join(cwd, "AGENTS.md"), strings.Repeat("rule ", 1000)) // 5,000 bytes
	writeFile(t, filepath.Join(cwd, "sub", "AGENTS.md"), "SUB RULES")
	writeFile(t, filepath.Join(cwd, "sub", "x.go"), "package sub\n")
	a, rec, m := newTestAgent(t, Config{Model: "m", Models: []request.Model{{Name: "m", ContextWindow: 8000}}})
	m.Enqueue(fakemodel.Reply{ToolCalls: []fakemodel.ToolCall{{ID: "call_1", Name: "read_file", Arguments: `{"path":"sub/x.go"}`}}})
	m.SetFallback(fakemodel.Reply{Text: "ok"})
	s, err := a.NewSession(context.Background(), &acp.NewSessionRequest{Cwd: cwd})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := prompt(a, s.SessionID, "read it"); err != nil {
		t.Fatal(err)
	}
	sys := systemOf(t, lastRequest(m))
	mustContain(t, "prompt", sys, "[truncated: 2048 of 5000 bytes shown; read AGENTS.md for the rest]",
		"Instructions in sub/AGENTS.md were not loaded: the size limit")
	mustNotContain(t, "prompt", sys, "SUB RULES")
	mustContain(t, "read result", toolResultOf(t, lastRequest(m), "call_1"), "Instructions in sub/AGENTS.md were not loaded")
	cards := strings.Join(instructionCards(rec), "|")
	mustContain(t, "cards", cards, "AGENTS.md (truncated)", "sub/AGENTS.md (not loaded: size limit reached)")
}

// Issue 28 item 2: a nested AGENTS.md is loaded when the model first
// touches its folder: into that tool result and the prompt, once; a
// restart neither repeats nor loses it.
func TestNestedInstructions(t *testing.T) {
	ctx := context.Background()
	cwd := t.TempDir()
	writeFile(t, filepath.Join(cwd, "pkg", "api", "AGENTS.md"), "API RULES: never break v1.")
	writeFile(t, filepath.Join(cwd, "pkg", "api", "a.go"), "package api\n")
	writeFile(t, filepath.Join(cwd, "pkg", "api", "b.go"), "package api // b\n")
	store := newTestStore(t)
	m := fakemodel.Start()
	t.Cleanup(m.Close)
	read := func(id, path string) fakemodel.Reply {
		return fakemodel.Reply{ToolCalls: []fakemodel.ToolCall{{ID: id, Name: "read_file", Arguments: `{"path":"` + path + `"}`}}}
	}
	m.Enqueue(read("call_1", "pkg/api/a.go"), read("call_2", "pkg/api/b.go"), fakemodel.Reply{Text: "done"})
	m.SetFallback(fakemodel.Reply{Text: "ok"})
	model := provider.NewOpenAI(provider.OpenAIConfig{BaseURL: m.URL(), APIKey: "sk-test"})
	cfg := Config{Model: "m"}
	rec := &recorder{}
	a := New(rec, store, model, cfg, nil)
	s, err := a.NewSession(ctx, &acp.NewSessionRequest{Cwd: cwd})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := prompt(a, s.SessionID, "look at the api"); err != nil {
		t.Fatal(err)
	}
	reqs := m.Requests()
	if len(reqs) != 3 {
		t.Fatalf("%d model requests, want 3", len(reqs))
	}
	mustNotContain(t, "first prompt", systemOf(t, reqs[0]), "API RULES")
	first := toolResultOf(t, reqs[1], "call_1")
	if !strings.HasPrefix(first, "1\tpackage api") || !strings.Contains(first, "\n\nInstructions from pkg/api/AGENTS.md:\nAPI RULES: never break v1.") {
		t.Errorf("the first read in pkg/api does not carry its instructions:\n%s", first)
	}
	mustNotContain(t, "second read", toolResultOf(t, reqs[2], "call_2"), "API RULES")
	mustContain(t, "prompt after the load", systemOf(t, reqs[2]), "Instructions from pkg/api/AGENTS.md:\nAPI RULES")
	if got := instructionCards(rec); len(got) != 1 || got[0] != "Project instructions loaded: pkg/api/AGENTS.md" {
		t.Errorf("the user was told %q", got)
	}

	a.Close()
	rec = &recorder{}
	a = New(rec, store, model, cfg, nil)
	defer a.Close()
	if _, err := a.LoadSession(ctx, &acp.LoadSessionRequest{SessionID: s.SessionID, Cwd: cwd}); err != nil {
		t.Fatal(err)
	}
	m.Enqueue(read("call_3", "pkg/api/a.go"), fakemodel.Reply{Text: "done"})
	if _, err := prompt(a, s.SessionID, "again"); err != nil {
		t.Fatal(err)
	}
	last := lastRequest(m)
	mustNotContain(t, "read after a restart", toolResultOf(t, last, "call_3"), "API RULES")
	mustContain(t, "prompt after a restart", systemOf(t, last), "Instructions from pkg/api/AGENTS.md:\nAPI RULES")
	// On opening, the user is told what applies; the model is not given
	// the file a second time.
	if got := instructionCards(rec); len(got) != 1 || got[0] != "Project instructions loaded: pkg/api/AGENTS.md" {
		t.Errorf("after a restart the user was told %q", got)
	}
}

// BenchmarkFixedPrefix reports the fixed prefix (system prompt and the
// built-in tool schemas) per tier, in tokens as the agent counts them
// (the larger of its counter and both OpenAI vocabularies): `make bench`
// shows them next to the budgets (compact ≤ 1,536 with tools; full prompt
// ≤ 4,096).
func BenchmarkFixedPrefix(b *testing.B) {
	c, err := compaction.NewCounter("", "o200k_base")
	if err != nil {
		b.Fatal(err)
	}
	var defs []provider.Tool
	for _, x := range tool.Builtins() {
		defs = append(defs, x.Definition())
	}
	for _, tier := range []sysprompt.Tier{sysprompt.Minimal, sysprompt.Compact, sysprompt.Full} {
		env := sysprompt.Env{Date: "Monday 2026-01-05", OS: "linux/amd64", Shell: "sh (commands run as sh -c)",
			Root: "/home/someone/src/github.com/example/a-fairly-long-project-name"}
		p := sysprompt.Session{Tier: tier, Model: "some-model-name", Mode: modeForModel(ModeDefault), Env: env}
		var s string
		for range b.N {
			s = sysprompt.Build(p)
		}
		sent := defs
		if tier == sysprompt.Minimal { // as toolDefinitions sends them there
			sent = nil
			for _, d := range defs {
				sent = append(sent, tool.Terse(d))
			}
		}
		b.ReportMetric(float64(compaction.FixedTokens(c, s, nil)), tier.String()+"-prompt-tokens")
		b.ReportMetric(float64(compaction.FixedTokens(c, s, sent)), tier.String()+"-prefix-tokens")
	}
}

// A client that takes notices is told about loaded instruction files with
// one, outside the conversation.
func TestInstructionsNotice(t *testing.T) {
	cwd := t.TempDir()
	writeFile(t, filepath.Join(cwd, "AGENTS.md"), "rules")
	a, rec, _ := newTestAgent(t, Config{Model: "m"})
	raw := json.RawMessage(`{}`)
	if _, err := a.Initialize(context.Background(), &acp.InitializeRequest{ProtocolVersion: 1,
		ClientCapabilities: acp.ClientCapabilities{Session: &acp.ClientSessionCapabilities{Notices: &raw}}}); err != nil {
		t.Fatal(err)
	}
	if _, err := a.NewSession(context.Background(), &acp.NewSessionRequest{Cwd: cwd}); err != nil {
		t.Fatal(err)
	}
	rec.mu.Lock()
	defer rec.mu.Unlock()
	var notices []string
	for _, u := range rec.updates {
		if u.ToolCall != nil {
			t.Errorf("a tool-call card for a client that takes notices: %+v", u.ToolCall)
		}
		if b, _ := json.Marshal(u); strings.Contains(string(b), `"notice"`) {
			notices = append(notices, string(b))
		}
	}
	if len(notices) != 1 || !strings.Contains(notices[0], `"title":"Project instructions loaded","description":"AGENTS.md"`) {
		t.Fatalf("notices: %q", notices)
	}
}
