package agent

import (
	"os"
	"strings"
	"testing"

	sysprompt "github.com/crow-acp/crow-acp/internal/agent/prompt"
	"github.com/crow-acp/crow-acp/internal/agent/tool"
	"github.com/crow-acp/crow-acp/internal/compaction"
	"github.com/crow-acp/crow-acp/internal/provider"
)

// TestFixedPrefixBudget: the system prompt and the built-in tool schemas,
// sent with every request, stay within 2,500 tokens so that small (8k)
// context windows keep room for the conversation.
func TestFixedPrefixBudget(t *testing.T) {
	const budget = 2500
	c, err := compaction.NewCounter("gpt-4o-mini", "")
	if err != nil {
		t.Fatal(err)
	}
	var defs []provider.Tool
	for _, x := range tool.Builtins() {
		defs = append(defs, x.Definition())
	}
	system := sysprompt.Build(sysprompt.Session{Tier: sysprompt.Compact, Env: sysprompt.Env{Root: "/home/someone/src/some-project"}})
	n := compaction.FixedTokens(c, system, defs)
	t.Logf("system prompt + %d tool schemas: %d tokens", len(defs), n)
	if n > budget {
		t.Fatalf("system prompt + built-in tool schemas take %d tokens, over the %d-token budget", n, budget)
	}
	if n <= compaction.FixedTokens(c, system, nil) {
		t.Fatal("tool schemas were not counted")
	}
}

// TestPermissionKeys: what needs asking in each mode.
func TestPermissionKeys(t *testing.T) {
	edit := &tool.Action{Access: tool.AccessEdit, PermissionKey: "edit"}
	run := &tool.Action{Access: tool.AccessExecute, PermissionKey: "command:go"}
	read := &tool.Action{Access: tool.AccessRead, PermissionKey: "read"}
	outside := &tool.Action{Access: tool.AccessRead, PermissionKey: "read", Outside: []string{"/etc/passwd"}}
	cases := []struct {
		mode string
		act  *tool.Action
		want int
	}{
		{ModeDefault, edit, 1}, {ModeDefault, run, 1}, {ModeDefault, read, 0}, {ModeDefault, outside, 1},
		{ModeAcceptEdits, edit, 0}, {ModeAcceptEdits, run, 1}, {ModeAcceptEdits, outside, 1},
		{ModeBypass, edit, 0}, {ModeBypass, run, 0}, {ModeBypass, outside, 1},
		{ModePlan, read, 0}, {ModePlan, outside, 1},
	}
	for _, c := range cases {
		if got := permissionKeys(c.mode, c.act); len(got) != c.want {
			t.Errorf("mode %s, access %d, outside %v: keys %v, want %d", c.mode, c.act.Access, c.act.Outside, got, c.want)
		}
	}
}

// Issue 13 case 9: bypass runs commands unconfined (a command naming a
// path outside the workspace runs without asking; only file tools still
// ask for outside paths), and the mode's description says so instead of
// claiming that outside paths still ask.
func TestBypassIsDescribedTruthfully(t *testing.T) {
	run := &tool.Action{Access: tool.AccessExecute, CommandKeys: []string{"command:cat"}}
	if keys := permissionKeys(ModeBypass, run); len(keys) != 0 {
		t.Fatalf("bypass asks for a command: %v", keys)
	}
	read := &tool.Action{Access: tool.AccessRead, Outside: []string{"/etc/shadow"}}
	if keys := permissionKeys(ModeBypass, read); len(keys) != 1 {
		t.Fatalf("bypass does not ask for a file tool outside: %v", keys)
	}
	for _, m := range sessionModes {
		if m.ID == ModeBypass && !strings.Contains(m.Description, "Commands are not confined") {
			t.Errorf("bypass is described as %q: it must say commands are not confined", m.Description)
		}
	}
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(readme), "**commands are not confined**") {
		t.Error("README does not say that bypass leaves commands unconfined")
	}
}
