package checkpoint

import (
	"context"
	"fmt"

	"github.com/crow-acp/crow-acp/internal/persistence"
)

// PromptSource is what Prompts reads.
type PromptSource interface {
	Messages(ctx context.Context, sessionID string, f persistence.MessageFilter) ([]persistence.Message, error)
	Undos(ctx context.Context, sessionID string) ([]persistence.Undo, error)
}

// Prompt is one prompt of a session.
type Prompt struct {
	// Number is its number as the user sees the conversation (1-based,
	// undone prompts not counted); 0 for an undone one.
	Number int
	Turn   int64  // its seq: the turn Undo takes
	Text   string // what the user sent (to offer it back after a rewind)
	Undone bool   // hidden by an undo
}

// Prompts lists a session's prompts in order.
func Prompts(ctx context.Context, st PromptSource, sessionID string) ([]Prompt, error) {
	msgs, err := st.Messages(ctx, sessionID, persistence.MessageFilter{})
	if err != nil {
		return nil, err
	}
	undos, err := st.Undos(ctx, sessionID)
	if err != nil {
		return nil, err
	}
	hidden := map[int64]bool{}
	for _, u := range undos {
		if u.State == persistence.UndoDone {
			for _, id := range u.Hidden {
				hidden[id] = true
			}
		}
	}
	var out []Prompt
	n := 0
	for _, m := range msgs {
		if m.Role != persistence.RoleUser {
			continue
		}
		p := Prompt{Turn: m.Seq, Text: m.Content, Undone: hidden[m.ID]}
		if !p.Undone {
			n++
			p.Number = n
		}
		out = append(out, p)
	}
	return out, nil
}

// TurnOf is the turn of prompt number n (0: the last prompt).
func TurnOf(ps []Prompt, n int) (int64, error) {
	last := int64(0)
	count := 0
	for _, p := range ps {
		if p.Undone {
			continue
		}
		count++
		last = p.Turn
		if p.Number == n {
			return p.Turn, nil
		}
	}
	switch {
	case n == 0 && last != 0:
		return last, nil
	case count == 0:
		return 0, fmt.Errorf("the session has no prompt to undo")
	}
	return 0, fmt.Errorf("there is no prompt %d: the session has %d", n, count)
}
