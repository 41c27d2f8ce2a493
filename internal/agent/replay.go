package agent

import (
	"context"
	"errors"

	"github.com/crow-acp/crow-acp/acp"
	"github.com/crow-acp/crow-acp/internal/persistence"
)

// replay re-sends a stored conversation as the session/update notifications
// a client saw when it happened, in seq order. It includes compacted
// (inactive) messages: the user sees the original conversation while the
// model sees the compacted view. A client that can batch (acp.Conn) gets
// the frames in few writes, all of them before replay returns.
func (l *lifecycle) replay(ctx context.Context, sessionID string, msgs []persistence.Message) (err error) {
	send := func(u acp.SessionUpdate) error {
		return l.client.SessionUpdate(ctx, &acp.SessionNotification{SessionID: sessionID, Update: u})
	}
	if c, ok := l.client.(batcher); ok {
		b := c.Batch()
		defer func() { err = errors.Join(err, b.Flush()) }()
		// The batch encodes each notification before it returns: one
		// will do for the whole replay.
		n := &acp.SessionNotification{SessionID: sessionID}
		send = func(u acp.SessionUpdate) error {
			n.Update = u
			return b.SessionUpdate(ctx, n)
		}
	}
	mark, err := l.compactionReplay(ctx, sessionID, msgs)
	if err != nil {
		return err
	}
	calls := newCallIndex(msgs)
	calls.subagents = l.capabilities().SupportsSubagents()
	var buf []acp.SessionUpdate // one message's updates, reused: send copies them
	for _, m := range msgs {
		if err := ctx.Err(); err != nil {
			return err // $/cancel_request on a long replay
		}
		buf = calls.appendReplay(appendReplayUpdates(buf[:0], m), m)
		for _, u := range mark(m, buf) {
			if err := send(u); err != nil {
				return err
			}
		}
	}
	return nil
}

// batcher is a client that can send many updates in few writes.
type batcher interface{ Batch() *acp.UpdateBatch }

// appendReplayUpdates appends the updates that show one stored message.
func appendReplayUpdates(out []acp.SessionUpdate, m persistence.Message) []acp.SessionUpdate {
	id := messageID(&m)
	chunk := func(b acp.ContentBlock) *acp.ContentChunk { return &acp.ContentChunk{Content: b, MessageID: id} }
	switch m.Role {
	case persistence.RoleUser:
		if len(m.Parts) == 0 {
			out = append(out, acp.SessionUpdate{UserMessageChunk: chunk(acp.TextBlock(m.Content))})
		}
		for _, p := range m.Parts {
			out = append(out, acp.SessionUpdate{UserMessageChunk: chunk(partBlock(p))})
		}
	case persistence.RoleAssistant:
		if m.Reasoning != "" {
			out = append(out, acp.SessionUpdate{AgentThoughtChunk: chunk(acp.TextBlock(m.Reasoning))})
		}
		if m.Content != "" {
			out = append(out, acp.SessionUpdate{AgentMessageChunk: chunk(acp.TextBlock(m.Content))})
		}
	}
	return out
}
