package tool

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/crow-acp/crow-acp/acp"
	"github.com/crow-acp/crow-acp/internal/provider"
)

type updatePlan struct{}

func (updatePlan) Definition() provider.Tool {
	return provider.Tool{
		Name:        "update_plan",
		Description: "Show the user your task list for multi-step work. Send the whole list each time.",
		Parameters: object(props{
			"entries": map[string]any{"type": "array", "items": object(props{
				"content":  str("The step"),
				"status":   map[string]any{"type": "string", "enum": []string{"pending", "in_progress", "completed"}},
				"priority": map[string]any{"type": "string", "enum": []string{"high", "medium", "low"}},
			}, "content", "status")},
		}, "entries"),
	}
}

type planArgs struct {
	Entries []struct {
		Content  string `json:"content"`
		Status   string `json:"status"`
		Priority string `json:"priority"`
	} `json:"entries"`
}

func (updatePlan) Prepare(env *Env, raw json.RawMessage) (*Action, error) {
	var a planArgs
	if err := decode(raw, &a); err != nil {
		return nil, err
	}
	if a.Entries == nil {
		return nil, errors.New("entries is required")
	}
	plan := &acp.Plan{Entries: make([]acp.PlanEntry, 0, len(a.Entries))}
	done := 0
	for i, e := range a.Entries {
		switch e.Status {
		case "pending", "in_progress", "completed":
		case "":
			e.Status = "pending"
		default:
			return nil, fmt.Errorf("entries[%d].status %q: use pending, in_progress or completed", i, e.Status)
		}
		switch e.Priority {
		case "high", "medium", "low":
		default:
			e.Priority = "medium"
		}
		if e.Status == "completed" {
			done++
		}
		plan.Entries = append(plan.Entries, acp.PlanEntry{Content: e.Content, Status: e.Status, Priority: e.Priority})
	}
	return &Action{
		Title: "Update plan", Kind: acp.ToolKindThink, Access: AccessNone,
		Run: func(context.Context, func([]acp.ToolCallContent)) Result {
			return Result{Output: fmt.Sprintf("Plan updated: %d of %d steps completed.", done, len(plan.Entries)), Plan: plan}
		},
	}, nil
}
