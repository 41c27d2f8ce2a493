package agent

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/crow-acp/crow-acp/internal/agent/tool"
)

// builtinSchemas are the real built-in tools' parameters.
func builtinSchemas() map[string]toolSchema {
	out := map[string]toolSchema{}
	for _, t := range tool.Builtins() {
		d := t.Definition()
		out[d.Name] = schemaOf(d.Parameters)
	}
	return out
}

func hasEdits(schemas map[string]toolSchema) bool {
	_, ok := schemas["edit_file"]["edits"]
	return ok
}

func TestRepairCall(t *testing.T) {
	schemas := builtinSchemas()
	editOld := "old_string"
	if _, ok := schemas["edit_file"]["old_string"]; !ok {
		editOld = "old" // before edit_file took the common names
	}
	editNew := strings.Replace(editOld, "old", "new", 1)
	for _, tc := range []struct {
		name, args string
		wantName   string
		wantArgs   map[string]any
		refused    bool
	}{
		{"Bash", `{"command":"ls"}`, "run_command", map[string]any{"command": "ls"}, false},
		{"shell", `{"cmd":"ls"}`, "run_command", map[string]any{"command": "ls"}, false},
		{"execute_command", `{"command":"ls","timeout":"30"}`, "run_command", map[string]any{"command": "ls", "timeout": 30.0}, false},
		{"Read", `{"file_path":"a.go"}`, "read_file", map[string]any{"path": "a.go"}, false},
		{"read", `{"filePath":"a.go"}`, "read_file", map[string]any{"path": "a.go"}, false},
		{"cat", `{"path":"a.go"}`, "read_file", map[string]any{"path": "a.go"}, false},
		{"Write", `{"file_path":"a.go","content":"x"}`, "write_file", map[string]any{"path": "a.go", "content": "x"}, false},
		{"create_file", `{"path":"a.go","file_text":"x"}`, "write_file", map[string]any{"path": "a.go", "content": "x"}, false},
		{"Edit", `{"file_path":"a.go","old_str":"a","new_str":"b"}`, "edit_file", map[string]any{"path": "a.go", editOld: "a", editNew: "b"}, false},
		{"Glob", `{"pattern":"**/*.go"}`, "list_files", map[string]any{"pattern": "**/*.go"}, false},
		{"Grep", `{"query":"func main","include":"*.go"}`, "search", map[string]any{"pattern": "func main", "glob": "*.go"}, false},
		{"LS", `{"path":"."}`, "list_files", map[string]any{"path": "."}, false},
		{"list_directory", `{"dir_path":"src"}`, "list_files", map[string]any{"path": "src"}, false},
		{"str_replace_editor", `{"command":"view","path":"a.go"}`, "read_file", map[string]any{"path": "a.go"}, false},
		{"str_replace_based_edit_tool", `{"command":"create","path":"a.go","file_text":"x"}`, "write_file", map[string]any{"path": "a.go", "content": "x"}, false},
		{"str_replace_editor", `{"command":"str_replace","path":"a.go","old_str":"a","new_str":"b"}`, "edit_file", map[string]any{"path": "a.go", editOld: "a", editNew: "b"}, false},
		{"str_replace_editor", `{"command":"insert","path":"a.go","insert_line":3,"new_str":"b"}`, "str_replace_editor", nil, true},
		{"str_replace_editor", `{"command":"undo_edit","path":"a.go"}`, "str_replace_editor", nil, true},
		{"TodoWrite", `{"todos":[{"content":"step","status":"pending","activeForm":"Stepping","id":"1"}]}`, "update_plan",
			map[string]any{"entries": []any{map[string]any{"content": "step", "status": "pending"}}}, false},
		{"Bash", `{"command":"make","timeout":120000,"description":"build"}`, "run_command", map[string]any{"command": "make", "timeout": 120.0, "description": "build"}, false},
		{"shell", `{"command":"make","timeout_ms":30000}`, "run_command", map[string]any{"command": "make", "timeout": 30.0}, false},
		{"MultiEdit", `{"file_path":"a.go","edits":[{"old_string":"a","new_string":"b"}]}`, "edit_file", nil, !hasEdits(schemas)},
		// The edit dialects of issue 38: gemini-cli's replace (allow_multiple;
		// its instruction is left for the tool, which ignores it), crush's
		// and opencode's multiedit with the names inside each edit.
		{"replace", `{"file_path":"a.go","instruction":"rename","old_string":"a","new_string":"b","allow_multiple":true}`, "edit_file",
			map[string]any{"path": "a.go", "instruction": "rename", "old_string": "a", "new_string": "b", "replace_all": true}, false},
		{"multiedit", `{"file_path":"a.go","edits":[{"old_string":"a","new_string":"b"}]}`, "edit_file",
			map[string]any{"path": "a.go", "edits": []any{map[string]any{"old_string": "a", "new_string": "b"}}}, false},
		{"multiedit", `{"filePath":"a.go","edits":[{"filePath":"a.go","oldString":"a","newString":"b","replaceAll":true},{"old_str":"c","new_str":"d"}]}`, "edit_file",
			map[string]any{"path": "a.go", "edits": []any{map[string]any{"filePath": "a.go", "old_string": "a", "new_string": "b", "replace_all": true},
				map[string]any{"old_string": "c", "new_string": "d"}}}, false},
		{"functions.read_file", `{"path":"a.go"}`, "read_file", map[string]any{"path": "a.go"}, false},
		{"READ_FILE", `{"path":"a.go"}`, "read_file", map[string]any{"path": "a.go"}, false},
		// Malformed arguments.
		{"read_file", `"{\"path\":\"a.go\"}"`, "read_file", map[string]any{"path": "a.go"}, false},
		{"read_file", `{"path":"a.go",}`, "read_file", map[string]any{"path": "a.go"}, false},
		{"read_file", `{"path":"a.go"}</parameter>`, "read_file", map[string]any{"path": "a.go"}, false},
		{"read_file", `{"path":"a.go</parameter>"}`, "read_file", map[string]any{"path": "a.go"}, false},
		{"read_file", "```json\n{\"path\":\"a.go\"}\n```", "read_file", map[string]any{"path": "a.go"}, false},
		{"read_file", `<|tool_call_begin|>{"path":"a.go"}<|tool_call_end|>`, "read_file", map[string]any{"path": "a.go"}, false},
		{"edit_file", `{"path":"a.go","` + editOld + `":"a","` + editNew + `":"b","replace_all":"true"}`, "edit_file", nil, false},
	} {
		r, ok := repairCall(tc.name, tc.args, schemas)
		if !ok {
			t.Errorf("%s %s: not repaired", tc.name, tc.args)
			continue
		}
		if r.Name != tc.wantName || (r.Refusal != "") != tc.refused {
			t.Errorf("%s %s: ran as %s (refusal %q), want %s (refused %v)", tc.name, tc.args, r.Name, r.Refusal, tc.wantName, tc.refused)
			continue
		}
		if tc.wantArgs == nil {
			continue
		}
		var got map[string]any
		if err := json.Unmarshal([]byte(r.Args), &got); err != nil || !reflect.DeepEqual(got, tc.wantArgs) {
			t.Errorf("%s %s: args %s, want %v", tc.name, tc.args, r.Args, tc.wantArgs)
		}
		if len(r.Changes) == 0 || !strings.Contains(r.Note(tc.name), "called as "+tc.wantName) {
			t.Errorf("%s %s: the note does not say what ran: %q", tc.name, tc.args, r.Note(tc.name))
		}
	}
}

// TestRepairLeavesTheRestAlone: unknown tools stay unknown (never a shell),
// a well-formed call runs as sent, and arguments that cannot be read are
// left for the tool to report.
func TestRepairLeavesTheRestAlone(t *testing.T) {
	schemas := builtinSchemas()
	for _, name := range []string{"python", "exec", "do_anything", "web_fetch", "str_replace_editor"} {
		if r, ok := repairCall(name, `{"code":"print(1)"}`, schemas); ok && r.Refusal == "" {
			t.Errorf("%s was mapped to %s", name, r.Name)
		}
	}
	r, ok := repairCall("read_file", `{"path": "a.go"}`, schemas)
	if !ok || r.Args != `{"path": "a.go"}` || len(r.Changes) != 0 || r.Note("read_file") != "" {
		t.Errorf("a good call was changed: %+v", r)
	}
	r, ok = repairCall("read_file", `{"path": "a.go"`, schemas)
	if !ok || r.Args != `{"path": "a.go"` {
		t.Errorf("unreadable arguments were changed: %+v", r)
	}
	// A file's content keeps text that looks like template junk.
	r, _ = repairCall("write_file", `{"path":"a.xml","content":"<a>\n</function>"}`, schemas)
	if !strings.Contains(r.Args, `</function>`) {
		t.Errorf("content was changed: %s", r.Args)
	}
	// A name the tool has is not renamed even when it is an alias.
	r, _ = repairCall("Grep", `{"pattern":"x","query":"y"}`, schemas)
	if !strings.Contains(r.Args, `"pattern":"x"`) {
		t.Errorf("pattern was replaced: %s", r.Args)
	}
}

func FuzzRepairArgs(f *testing.F) {
	for _, s := range []string{
		`{"path":"a.go"}`, `"{\"path\":\"a.go\"}"`, `{"a":1,}`, "```json\n{}\n```", `{"p":"x</parameter>"}`,
		"\x00\x01{\"a\":\"\x1b[31m\"}", "\xff\xfe{\"a\":1}", `"\"{\\\"a\\\":\\\"b\\\"}\""`, `{"a":{"b":[1,2,],},}`,
		strings.Repeat(`{"a":`, 10000), `<|im_end|>` + strings.Repeat("x", 1<<16),
	} {
		f.Add("Read", s)
	}
	schemas := builtinSchemas()
	f.Fuzz(func(t *testing.T, name, args string) {
		r, ok := repairCall(name, args, schemas)
		if !ok {
			return
		}
		if _, known := schemas[r.Name]; !known && r.Refusal == "" {
			t.Fatalf("repaired into unknown tool %q", r.Name)
		}
		if r.Name == "run_command" && name != "run_command" && toolAliases[name] != "run_command" && toolAliases[strings.ToLower(name)] != "run_command" &&
			!strings.EqualFold(strings.TrimPrefix(strings.TrimPrefix(name, "functions."), "default_api:"), "run_command") {
			t.Fatalf("%q became run_command", name)
		}
		if r.Args != args && r.Refusal == "" && !json.Valid([]byte(r.Args)) {
			t.Fatalf("repaired arguments are not JSON: %.200q", r.Args)
		}
	})
}
