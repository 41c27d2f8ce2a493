package transcript

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/crow-acp/crow-acp/internal/persistence"
)

// TestWriters: the JSON export names its format and keeps compacted
// messages (marked inactive) with empty arrays rather than null; Markdown
// fences a tool result longer than any backtick run inside it and labels
// it with its tool's name.
func TestWriters(t *testing.T) {
	at := time.Date(2026, 11, 24, 3, 0, 0, 0, time.UTC)
	d := &persistence.SessionDump{
		Session: persistence.Session{ID: "s1", Cwd: "/p", CreatedAt: at, UpdatedAt: at},
		Messages: []persistence.Message{
			{ID: 1, Seq: 1, Role: persistence.RoleUser, Content: "show x", Status: persistence.StatusComplete, CreatedAt: at},
			{ID: 2, Seq: 2, Role: persistence.RoleAssistant, ToolCalls: []persistence.ToolCall{{ID: "c1", Name: "read_file", Arguments: `{"path":"x"}`}}, Status: persistence.StatusComplete, CreatedAt: at},
			{ID: 3, Seq: 3, Role: persistence.RoleTool, ToolCallID: "c1", Content: "a ``` fence", Status: persistence.StatusComplete, CreatedAt: at},
		},
	}
	var j bytes.Buffer
	if err := WriteJSON(&j, d); err != nil {
		t.Fatal(err)
	}
	var got struct {
		Format      string            `json:"format"`
		Messages    []json.RawMessage `json:"messages"`
		Compactions []json.RawMessage `json:"compactions"`
	}
	if err := json.Unmarshal(j.Bytes(), &got); err != nil {
		t.Fatal(err)
	}
	if got.Format != Format || len(got.Messages) != 3 || got.Compactions == nil {
		t.Errorf("JSON export: format %q, %d messages, compactions %v", got.Format, len(got.Messages), got.Compactions)
	}
	var md bytes.Buffer
	if err := WriteMarkdown(&md, d); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"# Session s1", "## Tool result: `read_file`", "````\na ``` fence\n````", "**Tool call** `read_file` (`c1`)"} {
		if !strings.Contains(md.String(), want) {
			t.Errorf("Markdown lacks %q:\n%s", want, md.String())
		}
	}
}

// hostile is stored model text that would act on a terminal: OSC 52
// (clipboard), OSC 0 (window title), clear screen, a C1 CSI, a bidi
// override and DEL.
const hostile = "x\x1b]52;c;cm0gLXJmIH4K\x07\x1b]0;pwned\x1b\\\x1b[2J\u009b2J\u202e\x7f"

// TestWritersNeutralise: show, list and the Markdown export print stored
// text with every control visible, the session's id and cost currency too
// (issue 37: an imported id wrote OSC 52 through sessions list and the
// chat's /sessions); the JSON forms keep the exact value with those
// characters escaped.
func TestWritersNeutralise(t *testing.T) {
	at := time.Date(2026, 11, 24, 3, 0, 0, 0, time.UTC)
	meta, _ := json.Marshal(map[string]any{"cost": map[string]float64{"C" + hostile: 1}, "archived": true})
	d := &persistence.SessionDump{
		Session: persistence.Session{ID: "s1" + hostile, Cwd: "/p", Title: "title" + hostile, CreatedAt: at, UpdatedAt: at, Metadata: meta},
		Messages: []persistence.Message{
			{ID: 1, Seq: 1, Role: persistence.RoleUser, Content: "hi", Status: persistence.StatusComplete, CreatedAt: at},
			{ID: 2, Seq: 2, Role: persistence.RoleAssistant, Content: "answer" + hostile, Reasoning: "thought" + hostile,
				ToolCalls: []persistence.ToolCall{{ID: "c1", Name: "tool" + hostile, Arguments: `{"a":"` + hostile + `"}`}}, Status: persistence.StatusComplete, CreatedAt: at},
			{ID: 3, Seq: 3, Role: persistence.RoleTool, ToolCallID: "c1", Content: "result" + hostile, Status: persistence.StatusComplete, CreatedAt: at},
		},
	}
	clean := func(what, s string) {
		t.Helper()
		if strings.ContainsAny(s, "\x1b\x07\x7f\u009b\u202e") {
			t.Errorf("%s carries controls:\n%q", what, s)
		}
		if !strings.Contains(s, "^[]52;c;cm0gLXJmIH4K^G") || !strings.Contains(s, "<U+202E>") {
			t.Errorf("%s does not show the escapes:\n%q", what, s)
		}
	}
	var text, md, list bytes.Buffer
	WriteText(&text, d)
	clean("sessions show", text.String())
	if err := WriteMarkdown(&md, d); err != nil {
		t.Fatal(err)
	}
	clean("Markdown export", md.String())
	if err := WriteList(&list, []persistence.Session{d.Session}, false); err != nil {
		t.Fatal(err)
	}
	clean("sessions list", list.String())

	for _, asJSON := range []func(*bytes.Buffer) error{
		func(b *bytes.Buffer) error { return WriteJSON(b, d) },
		func(b *bytes.Buffer) error { return WriteList(b, []persistence.Session{d.Session}, true) },
	} {
		var j bytes.Buffer
		if err := asJSON(&j); err != nil {
			t.Fatal(err)
		}
		if strings.ContainsAny(j.String(), "\x1b\x07\x7f\u009b\u202e") {
			t.Errorf("JSON carries raw controls:\n%s", j.String())
		}
		var got struct {
			Title   string `json:"title"`
			Session struct {
				Title string `json:"title"`
			} `json:"session"`
		}
		if err := json.Unmarshal(j.Bytes(), &got); err != nil {
			t.Fatal(err)
		}
		if got.Title+got.Session.Title != d.Session.Title || !strings.Contains(j.String(), `"s1x\u001b]52;`) {
			t.Errorf("JSON changed the title: %q", got.Title+got.Session.Title)
		}
	}
}
