package tool

import "strings"

// Builtins returns the built-in tools, in the order offered to the model.
func Builtins() []Tool {
	return []Tool{readFile{}, writeFile{}, editFile{}, listFiles{}, search{}, runCommand{}, updatePlan{}, readOutput{}, askUser{}}
}

// The tools a model can edit files with.
const (
	EditFileTool   = "edit_file"
	ApplyPatchTool = "apply_patch"
)

// ForModel returns the built-in tools offered to model, with apply_patch
// in place of edit_file for the model families trained on it (GPT, the o
// series, codex). editTool overrides the choice: EditFileTool or
// ApplyPatchTool; "" chooses by the model's name.
func ForModel(model, editTool string) []Tool {
	tools := Builtins()
	if editTool == ApplyPatchTool || editTool == "" && PrefersApplyPatch(model) {
		for i, t := range tools {
			if _, ok := t.(editFile); ok {
				tools[i] = applyPatch{}
			}
		}
	}
	return tools
}

// EditTools are both editing tools. ForModel offers one of them; the agent
// accepts a call to either, since a model calls the one it was trained on
// whatever it was offered.
func EditTools() []Tool { return []Tool{editFile{}, applyPatch{}} }

// PrefersApplyPatch reports whether model's name is of a family trained on
// codex's apply_patch (gpt-*, o1/o3/o4*, *codex*), after any provider
// prefix ("openai/gpt-5").
func PrefersApplyPatch(model string) bool {
	m := strings.ToLower(model)
	if i := strings.LastIndexByte(m, '/'); i >= 0 {
		m = m[i+1:]
	}
	switch {
	case strings.HasPrefix(m, "gpt-"), strings.Contains(m, "codex"):
		return true
	case len(m) >= 2 && m[0] == 'o' && (m[1] == '1' || m[1] == '3' || m[1] == '4'):
		return len(m) == 2 || m[2] == '-'
	}
	return false
}
