package agent

import (
	"bytes"
	"encoding/json"
	"fmt"
	"path"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"unicode"

	"github.com/crow-acp/crow-acp/internal/agent/tool"
)

// Tool-call repair. Models trained on other agents call those agents' tools
// (`Bash`, `Read` with `file_path`, `str_replace_editor`) and send arguments
// a strict parser refuses (a JSON string holding the object, a trailing
// comma, a stray `</parameter>`). A call is repaired only when what it meant
// is unambiguous, and never into a more powerful tool than the one named: an
// unknown name stays unknown. The result tells the model what ran.

// toolSchema is what repair needs to know of a tool: its parameters and
// their JSON types ("string", "integer", "number", "boolean", "array",
// "object").
type toolSchema map[string]string

// schemaOf reads a tool's parameter types from its JSON schema.
func schemaOf(params map[string]any) toolSchema {
	out := toolSchema{}
	props, _ := params["properties"].(map[string]any)
	for name, p := range props {
		typ, _ := p.(map[string]any)["type"].(string)
		out[name] = typ
	}
	return out
}

// repairedCall is a tool call as it runs after repair.
type repairedCall struct {
	Name string // the tool that runs
	Args string // its arguments, a JSON object
	// Changes says what was repaired, for the result's note; empty when
	// the call ran as sent.
	Changes []string
	// Refusal, when set, is why the call cannot run (a command of an
	// editor tool with no equivalent here).
	Refusal string
}

// Note is the line put before a repaired call's result.
func (r repairedCall) Note(sent string) string {
	if len(r.Changes) == 0 {
		return ""
	}
	return fmt.Sprintf("Note: called as %s %s (you called %s: %s).\n", r.Name, abbreviate(r.Args, 300), sent, strings.Join(r.Changes, "; "))
}

// toolAliases maps the tool names other agents use to crow-acp's tools.
// Each has the same power as the original (a shell stays a shell, a read a
// read). Looked up as sent, then in lower case.
var toolAliases = map[string]string{
	"Bash": "run_command", "bash": "run_command", "shell": "run_command", "execute_command": "run_command",
	"run_shell_command": "run_command", "run_terminal_cmd": "run_command", "exec_command": "run_command",
	"Read": "read_file", "read": "read_file", "cat": "read_file", "view": "read_file", "read_text_file": "read_file",
	"Write": "write_file", "write": "write_file", "create_file": "write_file", "write_to_file": "write_file",
	"Edit": "edit_file", "edit": "edit_file", "str_replace": "edit_file", "replace": "edit_file",
	"MultiEdit": "edit_file", "multiedit": "edit_file", "multi_edit": "edit_file",
	"Glob": "list_files", "glob": "list_files", "LS": "list_files", "ls": "list_files", "list_directory": "list_files", "list_dir": "list_files",
	"Grep": "search", "grep": "search", "search_file_content": "search", "grep_search": "search", "rg": "search",
	"TodoWrite": "update_plan", "todowrite": "update_plan", "todo_write": "update_plan",
	"BashOutput": "read_output",
	// codex's shells before `shell` (GPT-4.1's local_shell; container.exec).
	"local_shell": "run_command", "container.exec": "run_command",
	// Claude Code's subagent tool (its subagent_type is ignored).
	"Task": "task", "Agent": "task",
	// Claude Code's question tool (its questions shape: ask.go).
	"AskUserQuestion": "ask_user",
}

// editorTools take a command argument that picks the operation
// (Anthropic's text editor tool and OpenHands').
var editorTools = map[string]bool{"str_replace_editor": true, "str_replace_based_edit_tool": true, "text_editor": true}

// argAliases are argument names models send, each with the names it may
// stand for in order of preference; a name is only renamed to one the
// tool has (so `old_str` becomes `old_string`, or `old` where the tool
// still calls it that).
var argAliases = map[string][]string{
	"file_path": {"path"}, "filepath": {"path"}, "filename": {"path"}, "file": {"path"},
	"absolute_path": {"path"}, "target_file": {"path"}, "dir_path": {"path"}, "directory": {"path"}, "dir": {"path"},
	"cmd": {"command"}, "script": {"command"},
	"query": {"pattern"}, "regex": {"pattern"}, "search": {"pattern"}, "include": {"glob"},
	"old_str": {"old_string", "old"}, "old_string": {"old"}, "old_text": {"old_string", "old"},
	"new_str": {"new_string", "new"}, "new_string": {"new"}, "new_text": {"new_string", "new"},
	"replace_all": {"all"}, "all": {"replace_all"}, "allow_multiple": {"replace_all", "all"},
	"file_text": {"content"}, "contents": {"content"}, "text": {"content"},
	"todos": {"entries"}, "bash_id": {"id"}, "shell_id": {"id"},
	"patch_text": {"input"}, "patch": {"input"}, // opencode's apply_patch takes patchText
	// Claude Code's Grep flags, where search has the option.
	"-i": {"case_insensitive", "ignore_case", "insensitive"}, "-C": {"context", "context_lines"},
	"ignore_case": {"case_insensitive"}, "case_insensitive": {"ignore_case"},
}

// repairCall maps a call to a tool that exists (schemas, by name) and
// repairs its arguments. ok is false when the name stays unknown.
func repairCall(name, args string, schemas map[string]toolSchema) (r repairedCall, ok bool) {
	obj, fixes, err := parseArgs(args)
	r.Changes = fixes
	target := name
	if _, known := schemas[name]; !known {
		target = resolveToolName(name, obj, schemas, &r)
		if target == "" {
			return r, false
		}
	}
	r.Name = target
	if r.Refusal != "" {
		return r, true
	}
	if err != nil {
		// The arguments stay as sent: the tool reports them.
		r.Args = args
		return r, true
	}
	if target != name && editorTools[name] {
		delete(obj, "command")
	}
	if _, multi := obj["edits"]; multi && target == "edit_file" {
		if _, has := schemas[target]["edits"]; !has {
			r.Refusal = name + " with several edits is not available here: call edit_file once per edit."
			return r, true
		}
	}
	fixTimeout(name, obj, &r)
	fixArgs(obj, schemas[target], &r)
	fixArgv(obj, schemas, &r)
	r.Args = marshalArgs(obj)
	if len(r.Changes) == 0 && args != r.Args {
		// Only formatting differs: run the model's own text.
		r.Args = args
	}
	return r, true
}

// marshalArgs writes repaired arguments as the model and the user read
// them: `<`, `>` and `&` as themselves, not \u003c (a heredoc, a `&&`).
func marshalArgs(obj map[string]any) string {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(obj)
	return strings.TrimSuffix(b.String(), "\n")
}

// resolveToolName finds the tool an unknown name stands for ("" if none).
func resolveToolName(name string, obj map[string]any, schemas map[string]toolSchema, r *repairedCall) string {
	known := func(n string) bool { _, ok := schemas[n]; return ok }
	note := func(t string) string {
		r.Changes = append([]string{"tool " + name + " is " + t + " here"}, r.Changes...)
		return t
	}
	trimmed := name
	for _, p := range []string{"functions.", "default_api:", "tools.", "tool."} {
		trimmed = strings.TrimPrefix(trimmed, p)
	}
	trimmed = strings.TrimSpace(trimmed)
	if trimmed != name && known(trimmed) {
		return note(trimmed)
	}
	for n := range schemas {
		if strings.EqualFold(n, trimmed) {
			return note(n)
		}
	}
	if editorTools[trimmed] {
		cmd, _ := obj["command"].(string)
		var t string
		switch cmd {
		case "view":
			t = "read_file"
			if _, isDir := obj["view_range"]; !isDir && strings.HasSuffix(fmt.Sprint(obj["path"]), "/") {
				t = "list_files"
			}
		case "create":
			t = "write_file"
		case "str_replace":
			t = "edit_file"
		case "insert":
			r.Refusal = name + " insert is not available here: use edit_file with old_string set to the line to insert after (read the file first) and new_string set to that line followed by the new text."
		case "undo_edit":
			r.Refusal = name + " undo_edit is not available to you: read the file and use edit_file to put back what you changed (the user can undo a whole prompt with /undo)."
		default:
			return ""
		}
		if r.Refusal != "" {
			return name
		}
		if !known(t) {
			return ""
		}
		return note(t)
	}
	t := toolAliases[trimmed]
	if t == "" {
		t = toolAliases[strings.ToLower(trimmed)]
	}
	if t == "" || !known(t) {
		return ""
	}
	return note(t)
}

// editItem is what one of edit_file's edits takes, for the names inside
// the edits of Claude Code's MultiEdit, crush's and opencode's multiedit.
var editItem = toolSchema{"old_string": "string", "new_string": "string", "replace_all": "boolean"}

// fixArgs renames the arguments the tool does not have to ones it has, and
// turns numbers and booleans sent as strings into what the schema wants.
func fixArgs(obj map[string]any, schema toolSchema, r *repairedCall) {
	keys := renameArgs(obj, schema, "", r)
	if edits, ok := obj["edits"].([]any); ok && r.Name == tool.EditFileTool {
		for _, e := range edits {
			if m, ok := e.(map[string]any); ok {
				renameArgs(m, editItem, "edits: ", r)
			}
		}
	}
	// Anthropic's view_range [first, last] is read_file's offset/limit.
	if vr, ok := obj["view_range"].([]any); ok && len(vr) == 2 {
		first, ok1 := vr[0].(float64)
		last, ok2 := vr[1].(float64)
		_, hasOff := schema["offset"]
		_, hasLim := schema["limit"]
		if ok1 && ok2 && hasOff && hasLim && first >= 1 {
			delete(obj, "view_range")
			obj["offset"] = first
			if last >= first {
				obj["limit"] = last - first + 1
			}
			r.Changes = append(r.Changes, "view_range is offset and limit")
		}
	}
	// TodoWrite's todos carry content and status like update_plan's
	// entries; other fields (id, activeForm) are dropped.
	if entries, ok := obj["entries"].([]any); ok && r.Name == planTool {
		for _, e := range entries {
			if m, ok := e.(map[string]any); ok {
				for k := range m {
					if k != "content" && k != "status" && k != "priority" {
						delete(m, k)
					}
				}
			}
		}
	}
	for _, k := range keys {
		s, ok := obj[k].(string)
		if !ok {
			continue
		}
		switch schema[k] {
		case "integer", "number":
			if n, err := strconv.ParseFloat(strings.TrimSpace(s), 64); err == nil && (schema[k] == "number" || n == float64(int64(n))) {
				obj[k] = n
				r.Changes = append(r.Changes, k+" is a number")
			}
		case "boolean":
			if b, err := strconv.ParseBool(strings.TrimSpace(s)); err == nil {
				obj[k] = b
				r.Changes = append(r.Changes, k+" is a boolean")
			}
		}
	}
}

// renameArgs renames the keys of obj the schema does not have to ones it
// has (each change noted once, after prefix), and returns obj's keys as
// sent, sorted.
func renameArgs(obj map[string]any, schema toolSchema, prefix string, r *repairedCall) []string {
	keys := make([]string, 0, len(obj))
	for k := range obj {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		if _, has := schema[k]; has {
			continue
		}
		names := []string{k}
		if s := snakeCase(k); s != k {
			names = append(names, s)
		}
		for _, n := range names {
			dst := ""
			if _, has := schema[n]; has && n != k {
				dst = n
			}
			for _, cand := range argAliases[n] {
				if _, has := schema[cand]; has && dst == "" {
					dst = cand
				}
			}
			if _, taken := obj[dst]; dst == "" || taken {
				continue
			}
			obj[dst] = obj[k]
			delete(obj, k)
			r.Changes = appendOnce(r.Changes, prefix+k+" is "+dst)
			break
		}
	}
	return keys
}

// fixTimeout turns a timeout in milliseconds into run_command's seconds:
// timeout_ms (codex's shell), and Claude Code's Bash, whose timeout is in
// milliseconds (a value under 1000 is taken as seconds already).
func fixTimeout(name string, obj map[string]any, r *repairedCall) {
	if ms, ok := obj["timeout_ms"].(float64); ok {
		if _, has := obj["timeout"]; !has {
			delete(obj, "timeout_ms")
			obj["timeout"] = max(1, ms/1000)
			r.Changes = append(r.Changes, "timeout_ms is timeout in seconds")
		}
	}
	if ms, ok := obj["timeout"].(float64); ok && name == "Bash" && ms >= 1000 {
		obj["timeout"] = ms / 1000
		r.Changes = append(r.Changes, "timeout is in seconds here")
	}
}

// snakeCase turns filePath into file_path.
func snakeCase(s string) string {
	var b strings.Builder
	for i, c := range s {
		if unicode.IsUpper(c) {
			if i > 0 {
				b.WriteByte('_')
			}
			c = unicode.ToLower(c)
		}
		b.WriteRune(c)
	}
	return b.String()
}

// maxRepairBytes bounds the arguments repair works on; larger ones are
// parsed as sent.
const maxRepairBytes = 4 << 20

// junk is a template token models leak into arguments: a tag of an
// XML-style tool call or a special token such as <|im_end|>.
const junk = `(?:</?(?:parameter|function|tool_call|tool_calls|arg_value|arg_key|invoke)(?:=[^>]{0,200})?>|<\|[^|<>]{1,40}\|>)`

// Compiled on first use: the bounded repetition makes large programs,
// about a millisecond of every start before initialize is answered.
var (
	leadingJunk  = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^(?:\s*` + junk + `)+\s*`) })
	trailingJunk = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`\s*(?:` + junk + `\s*)+$`) })
)

// trimJunk removes template tokens before and after s.
func trimJunk(s string) string {
	return strings.TrimSpace(trailingJunk().ReplaceAllString(leadingJunk().ReplaceAllString(s, ""), ""))
}

// parseArgs reads a tool call's arguments as a JSON object, repairing what
// is unambiguous: an object wrapped in ```json fences or in a JSON string
// (twice at most), template junk before or after it or ending a string
// value, and trailing commas. fixes says what was repaired.
func parseArgs(args string) (obj map[string]any, fixes []string, err error) {
	s := strings.TrimSpace(args)
	if s == "" {
		return map[string]any{}, nil, nil
	}
	if err := json.Unmarshal([]byte(s), &obj); err == nil && obj != nil {
		return cleanStrings(obj, &fixes), fixes, nil
	}
	if len(s) > maxRepairBytes {
		return nil, nil, fmt.Errorf("arguments too large to repair")
	}
	for range 3 {
		next := s
		if t, ok := unfence(next); ok {
			next, fixes = t, appendOnce(fixes, "arguments were in a code fence")
		}
		if t := trimJunk(next); t != next {
			next, fixes = t, appendOnce(fixes, "stray tags removed")
		}
		var str string
		if json.Unmarshal([]byte(next), &str) == nil {
			next, fixes = strings.TrimSpace(str), appendOnce(fixes, "arguments were a JSON string")
		}
		if t, ok := dropTrailingCommas(next); ok {
			next, fixes = t, appendOnce(fixes, "trailing comma removed")
		}
		obj = nil
		if json.Unmarshal([]byte(next), &obj) == nil && obj != nil {
			return cleanStrings(obj, &fixes), fixes, nil
		}
		if next == s {
			break
		}
		s = next
	}
	return nil, nil, fmt.Errorf("not a JSON object")
}

// cleanStrings strips template junk that ends a one-line top-level string
// value (`"a.go</parameter>"`): a path, a command, a pattern. Text of
// several lines (a file's content) is left as sent.
func cleanStrings(obj map[string]any, fixes *[]string) map[string]any {
	for k, v := range obj {
		s, ok := v.(string)
		if !ok || len(s) > 4096 || strings.ContainsRune(s, '\n') {
			continue
		}
		if t := trailingJunk().ReplaceAllString(s, ""); t != s {
			obj[k] = t
			*fixes = appendOnce(*fixes, "stray tags removed")
		}
	}
	return obj
}

func appendOnce(list []string, s string) []string {
	if slices.Contains(list, s) {
		return list
	}
	return append(list, s)
}

// unfence takes an object out of a Markdown code fence.
func unfence(s string) (string, bool) {
	if !strings.HasPrefix(s, "```") {
		return s, false
	}
	body := s[3:]
	if nl := strings.IndexByte(body, '\n'); nl >= 0 && !strings.Contains(body[:nl], "{") {
		body = body[nl+1:]
	}
	body = strings.TrimSpace(body)
	body, ok := strings.CutSuffix(body, "```")
	return strings.TrimSpace(body), ok
}

// dropTrailingCommas removes commas that directly precede } or ] (outside
// strings).
func dropTrailingCommas(s string) (string, bool) {
	var out bytes.Buffer
	inStr, esc, changed := false, false, false
	for i := 0; i < len(s); i++ {
		c := s[i]
		if inStr {
			out.WriteByte(c)
			switch {
			case esc:
				esc = false
			case c == '\\':
				esc = true
			case c == '"':
				inStr = false
			}
			continue
		}
		if c == '"' {
			inStr = true
		}
		if c == ',' {
			j := i + 1
			for j < len(s) && strings.IndexByte(" \t\r\n", s[j]) >= 0 {
				j++
			}
			if j < len(s) && (s[j] == '}' || s[j] == ']') {
				changed = true
				continue
			}
		}
		out.WriteByte(c)
	}
	return out.String(), changed
}

// abbreviate cuts s to n bytes on a rune boundary.
func abbreviate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && s[n]&0xC0 == 0x80 {
		n--
	}
	return s[:n] + "…"
}

// planTool is the built-in planning tool: shown as plan updates, not as a
// tool call.
const planTool = "update_plan"

// commandTool runs shell commands: the work tree is kept before a turn's
// first one (undo.go).
const commandTool = "run_command"

// fixArgv repairs run_command's command sent as an array of strings:
//   - ["apply_patch", PATCH] is the apply_patch tool (when offered; else the
//     quoted line, which run_command hands to it);
//   - [SHELL, "-c" or "-lc", SCRIPT] is the script itself;
//   - any other argv is one line, each word quoted, so it runs as given.
func fixArgv(obj map[string]any, schemas map[string]toolSchema, r *repairedCall) {
	if r.Name != "run_command" {
		return
	}
	arr, ok := obj["command"].([]any)
	if !ok {
		return
	}
	argv := make([]string, len(arr))
	for i, v := range arr {
		if argv[i], ok = v.(string); !ok {
			return // not an argv: the tool reports the arguments
		}
	}
	_, patchOffered := schemas["apply_patch"]
	switch {
	case len(argv) == 2 && (argv[0] == "apply_patch" || argv[0] == "applypatch") && patchOffered:
		wd := obj["workdir"]
		clear(obj)
		obj["input"] = argv[1]
		if wd != nil {
			obj["workdir"] = wd
		}
		r.Name = "apply_patch"
		r.Changes = slices.DeleteFunc(r.Changes, func(c string) bool {
			return strings.HasPrefix(c, "tool ") && strings.HasSuffix(c, " is run_command here")
		})
		r.Changes = append([]string{`command ["apply_patch", PATCH] is the apply_patch tool with input PATCH`}, r.Changes...)
	case len(argv) == 3 && shells[path.Base(argv[0])] && (argv[1] == "-c" || argv[1] == "-lc"):
		obj["command"] = argv[2]
		r.Changes = append(r.Changes, fmt.Sprintf("command [%q, %q, SCRIPT] is SCRIPT, run with sh -c", argv[0], argv[1]))
	default:
		line, err := tool.QuoteArgv(argv)
		if err != nil {
			r.Refusal = "run_command: the command array cannot be run: " + err.Error() + "; send command as one string."
			return
		}
		obj["command"] = line
		r.Changes = append(r.Changes, "command array is one line, each word quoted")
	}
}

// Codex-trained models send a command as an argv array, the way codex's
// shell tool takes it (openai/codex codex-rs/core: `shell` with
// `{"command": ["bash", "-lc", "…"]}`, and the patch as `["apply_patch",
// "*** Begin Patch…"]`, codex-rs/apply-patch). run_command takes one line:
// the array is turned into exactly what it runs, and the note says so.

// shells whose `-c SCRIPT` is SCRIPT for run_command.
var shells = map[string]bool{"bash": true, "sh": true, "zsh": true, "dash": true}
