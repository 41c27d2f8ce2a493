package compaction

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/crow-acp/crow-acp/internal/persistence"
)

// Pinned is the state every summary carries as data, whatever the model
// wrote: losing the task, the newest request or the touched files is how
// summaries fail users.
type Pinned struct {
	Task          string   `json:"task,omitempty"`          // the session's original request
	LatestRequest string   `json:"latestRequest,omitempty"` // the newest user request
	FilesRead     []string `json:"filesRead,omitempty"`
	FilesEdited   []string `json:"filesEdited,omitempty"`
	OpenPlan      []string `json:"openPlan,omitempty"` // plan items not completed
}

// summaryMeta is what a summary message keeps in Message.Meta.
type summaryMeta struct {
	Crow struct {
		Policy string  `json:"policy"`
		Pinned *Pinned `json:"pinned,omitempty"`
		// PrunedFrom is the original tool message a pruning marker replaces.
		PrunedFrom int64 `json:"prunedFrom,omitempty"`
	} `json:"crow"`
}

// PinnedOf returns the pinned state a summary message carries, or nil.
func PinnedOf(m *persistence.Message) *Pinned {
	if len(m.Meta) == 0 {
		return nil
	}
	var meta summaryMeta
	if json.Unmarshal(m.Meta, &meta) != nil {
		return nil
	}
	return meta.Crow.Pinned
}

// Limits of the pinned state, so it never crowds out the conversation.
const (
	pinnedMaxFiles = 40
	pinnedMaxPlan  = 20
)

// pinnedTextTokens caps the task and the latest request in the pinned
// state: a twentieth of the input budget, between 50 and 400 tokens.
func pinnedTextTokens(s Settings) int {
	if s.Budget() == 0 {
		return 400
	}
	return min(max(s.Budget()/20, 50), 400)
}

// collectPinned builds the pinned state from the earlier summaries, the
// compacted messages and the whole view's newest request.
func collectPinned(c Counter, limit int, summaries, compacted []persistence.Message, newest *persistence.Message) *Pinned {
	p := &Pinned{}
	for i := range summaries {
		if prev := PinnedOf(&summaries[i]); prev != nil {
			if p.Task == "" {
				p.Task = prev.Task
			}
			p.FilesRead = appendNew(p.FilesRead, prev.FilesRead...)
			p.FilesEdited = appendNew(p.FilesEdited, prev.FilesEdited...)
			if len(prev.OpenPlan) > 0 {
				p.OpenPlan = prev.OpenPlan
			}
		}
	}
	for _, m := range compacted {
		if m.Role == persistence.RoleUser && p.Task == "" {
			p.Task = truncate(c, m.Content, limit)
		}
		for _, tc := range m.ToolCalls {
			read, edited, plan := toolFacts(tc)
			p.FilesRead = appendNew(p.FilesRead, read...)
			p.FilesEdited = appendNew(p.FilesEdited, edited...)
			if plan != nil {
				p.OpenPlan = plan
			}
		}
	}
	if newest != nil {
		p.LatestRequest = truncate(c, newest.Content, limit)
		if p.Task == "" {
			p.Task = p.LatestRequest
		}
	}
	p.FilesRead = lastN(p.FilesRead, pinnedMaxFiles)
	p.FilesEdited = lastN(p.FilesEdited, pinnedMaxFiles)
	p.OpenPlan = lastN(p.OpenPlan, pinnedMaxPlan)
	return p
}

// toolFacts reads files and plan items from a tool call's arguments. Tools
// are recognised by name and common argument names, so tools added later
// are covered without a registry.
func toolFacts(tc persistence.ToolCall) (read, edited, plan []string) {
	var args map[string]any
	if json.Unmarshal([]byte(tc.Arguments), &args) != nil {
		return nil, nil, nil
	}
	name := strings.ToLower(tc.Name)
	var paths []string
	for _, k := range []string{"path", "file_path", "filePath", "file", "filename", "target"} {
		if s, ok := args[k].(string); ok && s != "" {
			paths = append(paths, s)
		}
	}
	if list, ok := args["paths"].([]any); ok {
		for _, v := range list {
			if s, ok := v.(string); ok {
				paths = append(paths, s)
			}
		}
	}
	switch {
	case containsAny(name, "write", "edit", "create", "patch", "replace", "delete", "move", "rename", "apply"):
		edited = paths
	default:
		read = paths
	}
	if containsAny(name, "plan", "todo") {
		for _, key := range []string{"entries", "todos", "items", "plan", "steps"} {
			list, ok := args[key].([]any)
			if !ok {
				continue
			}
			plan = []string{}
			for _, v := range list {
				item, ok := v.(map[string]any)
				if !ok {
					continue
				}
				status, _ := item["status"].(string)
				if status == "completed" || status == "done" || status == "cancelled" {
					continue
				}
				for _, f := range []string{"content", "text", "title", "step", "description"} {
					if s, ok := item[f].(string); ok && s != "" {
						plan = append(plan, s)
						break
					}
				}
			}
			break
		}
	}
	return read, edited, plan
}

// Render writes the pinned state as the data section of a summary.
func (p *Pinned) Render() string {
	var b strings.Builder
	b.WriteString("## Pinned state (recorded by crow-acp from the conversation itself)\n")
	if p.Task != "" {
		fmt.Fprintf(&b, "Original task: %s\n", oneLine(p.Task))
	}
	if p.LatestRequest != "" {
		fmt.Fprintf(&b, "Latest request: %s\n", oneLine(p.LatestRequest))
	}
	if len(p.FilesRead) > 0 {
		fmt.Fprintf(&b, "Files read: %s\n", strings.Join(p.FilesRead, ", "))
	}
	if len(p.FilesEdited) > 0 {
		fmt.Fprintf(&b, "Files edited: %s\n", strings.Join(p.FilesEdited, ", "))
	}
	if len(p.OpenPlan) > 0 {
		b.WriteString("Open plan items:\n")
		for _, it := range p.OpenPlan {
			fmt.Fprintf(&b, "- %s\n", oneLine(it))
		}
	}
	return strings.TrimRight(b.String(), "\n")
}

func oneLine(s string) string {
	return strings.Join(strings.Fields(s), " ")
}

func containsAny(s string, subs ...string) bool {
	for _, sub := range subs {
		if strings.Contains(s, sub) {
			return true
		}
	}
	return false
}

// appendNew appends the values not yet in list, moving repeated ones to
// the end (most recent last).
func appendNew(list []string, vals ...string) []string {
	for _, v := range vals {
		if i := slices.Index(list, v); i >= 0 {
			list = slices.Delete(list, i, i+1)
		}
		list = append(list, v)
	}
	return list
}

func lastN(list []string, n int) []string {
	if len(list) > n {
		return list[len(list)-n:]
	}
	return list
}
