package agent

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/crow-acp/crow-acp/internal/agent/tool"
)

// Issue 38: a command sent as an argv array (codex's shell tool) runs as
// what it means, and the note names what ran; opencode's patchText is
// apply_patch's input.
func TestRepairArgv(t *testing.T) {
	const patch = "*** Begin Patch\n*** Add File: a\n+x\n*** End Patch\n"
	withPatch := builtinSchemas()
	for _, d := range tool.ForModel("gpt-5", "") {
		withPatch[d.Definition().Name] = schemaOf(d.Definition().Parameters)
	}
	for _, tc := range []struct {
		name, args string
		schemas    map[string]toolSchema
		wantName   string
		wantArgs   map[string]any
		wantNote   string
	}{
		{"shell", `{"command":["bash","-lc","ls -la | head"],"workdir":"/w","timeout_ms":5000}`, builtinSchemas(), "run_command",
			map[string]any{"command": "ls -la | head", "workdir": "/w", "timeout": 5.0}, `command ["bash", "-lc", SCRIPT] is SCRIPT`},
		{"run_command", `{"command":["/bin/sh","-c","echo $HOME"]}`, builtinSchemas(), "run_command",
			map[string]any{"command": "echo $HOME"}, `is SCRIPT, run with sh -c`},
		{"shell", `{"command":["rg","-n","a b","$(id)"]}`, builtinSchemas(), "run_command",
			map[string]any{"command": "rg -n 'a b' '$(id)'"}, "command array is one line, each word quoted"},
		{"local_shell", `{"command":["ls"]}`, builtinSchemas(), "run_command", map[string]any{"command": "ls"}, "tool local_shell is run_command here"},
		{"container.exec", `{"cmd":["ls","-l"]}`, builtinSchemas(), "run_command", map[string]any{"command": "ls -l"}, "cmd is command"},
		{"shell", `{"command":["apply_patch",` + jsonString(patch) + `],"workdir":"sub"}`, withPatch, "apply_patch",
			map[string]any{"input": patch, "workdir": "sub"}, `command ["apply_patch", PATCH] is the apply_patch tool`},
		// apply_patch not offered: the quoted line, which run_command
		// hands to the patch tool itself.
		{"shell", `{"command":["apply_patch",` + jsonString(patch) + `]}`, builtinSchemas(), "run_command",
			map[string]any{"command": "apply_patch '" + patch + "'"}, "command array is one line"},
		{"apply_patch", `{"patchText":` + jsonString(patch) + `}`, withPatch, "apply_patch", map[string]any{"input": patch}, "patchText is input"},
		// Not an argv of strings: left for the tool to report.
		{"shell", `{"command":["ls",1]}`, builtinSchemas(), "run_command", map[string]any{"command": []any{"ls", 1.0}}, "tool shell is run_command here"},
	} {
		r, ok := repairCall(tc.name, tc.args, tc.schemas)
		if !ok || r.Refusal != "" {
			t.Errorf("%s %s: not repaired (refusal %q)", tc.name, tc.args, r.Refusal)
			continue
		}
		var got map[string]any
		if err := json.Unmarshal([]byte(r.Args), &got); err != nil {
			t.Fatal(err)
		}
		if r.Name != tc.wantName || !reflect.DeepEqual(got, tc.wantArgs) {
			t.Errorf("%s %s: ran as %s %v, want %s %v", tc.name, tc.args, r.Name, got, tc.wantName, tc.wantArgs)
		}
		if note := r.Note(tc.name); !strings.Contains(note, tc.wantNote) || strings.Contains(note, "is run_command here") && r.Name != "run_command" {
			t.Errorf("%s %s: note %q, want it to say %q", tc.name, tc.args, note, tc.wantNote)
		}
	}
	for _, args := range []string{`{"command":[]}`, `{"command":["echo","a\u0000b"]}`} {
		if r, _ := repairCall("shell", args, builtinSchemas()); !strings.Contains(r.Refusal, "send command as one string") {
			t.Errorf("%s: refusal %q", args, r.Refusal)
		}
	}
}

func jsonString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// A repaired call's arguments, in the note the model reads and the
// rawInput the user sees, keep `<`, `>` and `&` as written (a heredoc, a
// `&&`), not as \u003c escapes.
func TestRepairArgsReadable(t *testing.T) {
	r, _ := repairCall("Bash", `{"command":"make && cat <<'EOF' > x\nEOF","timeout":"5"}`, builtinSchemas())
	if !strings.Contains(r.Args, `make && cat <<'EOF' > x`) || !strings.Contains(r.Note("Bash"), "&& cat <<") {
		t.Fatalf("args %s, note %q", r.Args, r.Note("Bash"))
	}
}
