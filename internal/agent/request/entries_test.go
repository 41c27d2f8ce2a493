package request

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"

	"github.com/crow-acp/crow-acp/internal/compaction"
	"github.com/crow-acp/crow-acp/internal/persistence"
)

// The request messages built from the kept closed part of the last view
// are contextMessages of the whole view, along random histories that grow
// as turns grow them (prompts, replies with calls, results, results for
// earlier calls, repeated call ids, empty replies, summaries) and are
// sometimes replaced, as after a compaction or an edit.
func TestRequestEntriesMatchAFullBuild(t *testing.T) {
	r := rand.New(rand.NewPCG(19, 4))
	c := compaction.Estimator{}
	ids := []string{"call_0", "call_1", "call_2", "c3"}
	for run := range 300 {
		var cc ContextCache
		var view []persistence.Message
		id := int64(0)
		msg := func(role persistence.Role) persistence.Message {
			id++
			m := persistence.Message{ID: id, Seq: id, Role: role, Content: fmt.Sprint("m", id), TokenCount: int(id)}
			switch role {
			case persistence.RoleAssistant:
				if r.IntN(4) == 0 {
					m.Content = ""
				}
				for n := r.IntN(3); n > 0; n-- {
					m.ToolCalls = append(m.ToolCalls, persistence.ToolCall{ID: ids[r.IntN(len(ids))], Name: "t"})
				}
			case persistence.RoleTool:
				m.ToolCallID = ids[r.IntN(len(ids))]
			}
			return m
		}
		for step := range 30 {
			if r.IntN(12) == 0 && len(view) > 2 {
				// Replaced, as after an edit or a compaction: a new array.
				view = slices.Clone(view)
				if r.IntN(2) == 0 {
					view[r.IntN(len(view))].Content += " (edited)"
				} else {
					view = slices.Delete(view, 1, 1+r.IntN(len(view)-1))
				}
			}
			roles := []persistence.Role{persistence.RoleUser, persistence.RoleAssistant, persistence.RoleTool, persistence.RoleTool, persistence.RoleAssistant}
			if r.IntN(20) == 0 {
				roles = append(roles, persistence.RoleSummary)
			}
			for n := 1 + r.IntN(4); n > 0; n-- {
				view = append(view, msg(roles[r.IntN(len(roles))]))
			}
			got := cc.RequestEntries(c, "system", slices.Clip(view))
			want := ContextMessages(c, "system", view)
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("run %d step %d: entries differ\n got %+v\nwant %+v", run, step, got, want)
			}
		}
	}
}
