package agent

import (
	"fmt"
	"path"
	"slices"
	"strings"

	"github.com/crow-acp/crow-acp/internal/agent/tool"
)

// Codex-trained models send a command as an argv array, the way codex's
// shell tool takes it (openai/codex codex-rs/core: `shell` with
// `{"command": ["bash", "-lc", "…"]}`, and the patch as `["apply_patch",
// "*** Begin Patch…"]`, codex-rs/apply-patch). run_command takes one line:
// the array is turned into exactly what it runs, and the note says so.

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

// shells whose `-c SCRIPT` is SCRIPT for run_command.
var shells = map[string]bool{"bash": true, "sh": true, "zsh": true, "dash": true}
