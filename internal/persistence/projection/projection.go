// Package projection rebuilds a session's messages and compactions from its
// event log and compares them with the live tables. The messages table is a
// projection of the message_appended, message_updated and
// compaction_applied events the store records in the same transaction as
// each change; Verify proves it.
package projection

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"strings"

	"github.com/crow-acp/crow-acp/internal/persistence"
)

// State is a session's tables as rebuilt from its events.
type State struct {
	Messages    []persistence.Message // in seq order
	Compactions []persistence.Compaction
	// Pruned are the ids of messages whose streamed text left the log
	// with its frames (sessions prune-frames, the retention option): their
	// content and reasoning are not rebuilt.
	Pruned map[int64]bool
}

// Rebuild applies a session's projection events, in seq order. Frame and
// lifecycle events are skipped.
func Rebuild(sessionID string, events []persistence.Event) (*State, error) {
	byID := make(map[int64]*persistence.Message)
	var order []int64
	st := &State{Pruned: make(map[int64]bool)}
	var streamed map[string]persistence.StreamedText // read once a record needs it
	for _, e := range events {
		if !e.Kind.IsProjection() {
			continue
		}
		body := e.Body // a projection event's record is its body
		switch e.Kind {
		case persistence.EventMessageAppended, persistence.EventMessageUpdated:
			var rec persistence.MessageRecord
			if err := json.Unmarshal(body, &rec); err != nil {
				return nil, fmt.Errorf("event %d (%s): %w", e.Seq, e.Kind, err)
			}
			if rec.ContentStreamed != 0 || rec.ReasoningStreamed != 0 {
				if streamed == nil {
					var err error
					if streamed, err = StreamedTexts(events); err != nil {
						return nil, err
					}
				}
				var werr error
				if rec, werr = rec.WithStreamed(streamed["msg_"+strconv.FormatInt(rec.Seq, 10)]); werr != nil {
					if !framesPruned(events) {
						return nil, fmt.Errorf("event %d (%s): %w", e.Seq, e.Kind, werr)
					}
					st.Pruned[rec.ID] = true
				}
			}
			if st.Pruned[rec.ID] { // its text so far is unknown: keep none
				rec.Content, rec.ContentFrom, rec.ContentStreamed = "", 0, 0
				rec.Reasoning, rec.ReasoningFrom, rec.ReasoningStreamed = "", 0, 0
			}
			m := rec.Message(sessionID)
			old, exists := byID[m.ID]
			switch {
			case e.Kind == persistence.EventMessageAppended && exists:
				return nil, fmt.Errorf("event %d: message %d appended twice", e.Seq, m.ID)
			case e.Kind == persistence.EventMessageUpdated && !exists:
				return nil, fmt.Errorf("event %d: update of unknown message %d", e.Seq, m.ID)
			case exists:
				// An update rewrites content and status, or appends to the
				// text; compaction state is the projection's own.
				up, err := rec.Updated(sessionID, old)
				if err != nil {
					return nil, fmt.Errorf("event %d: %w", e.Seq, err)
				}
				*old = up
			default:
				byID[m.ID] = &m
				order = append(order, m.ID)
			}
		case persistence.EventSessionImported:
			var rec persistence.ImportRecord
			if err := json.Unmarshal(body, &rec); err != nil {
				return nil, fmt.Errorf("event %d (%s): %w", e.Seq, e.Kind, err)
			}
			byID, order, st.Compactions = make(map[int64]*persistence.Message), nil, nil
			for _, r := range rec.Messages {
				m := r.Message(sessionID)
				byID[m.ID] = &m
				order = append(order, m.ID)
			}
			for _, c := range rec.Compactions {
				c.SessionID = sessionID
				st.Compactions = append(st.Compactions, c)
			}
		case persistence.EventMessagesChanged:
			var rec persistence.ChangeRecord
			if err := json.Unmarshal(body, &rec); err != nil {
				return nil, fmt.Errorf("event %d (%s): %w", e.Seq, e.Kind, err)
			}
			for _, r := range rec.Messages {
				m := r.Message(sessionID)
				if old, ok := byID[m.ID]; ok {
					*old = m
					continue
				}
				byID[m.ID] = &m
				order = append(order, m.ID)
			}
			for _, p := range rec.Patches {
				for _, id := range p.IDs {
					m, ok := byID[id]
					if !ok {
						return nil, fmt.Errorf("event %d: change of unknown message %d", e.Seq, id)
					}
					m.IsActive, m.CompactedIntoID = p.IsActive, nil
					if p.CompactedIntoID != nil {
						into := *p.CompactedIntoID
						m.CompactedIntoID = &into
					}
				}
			}
			for _, id := range rec.DeletedMessages {
				delete(byID, id)
			}
			if rec.DeletedCompaction != 0 {
				st.Compactions = slices.DeleteFunc(st.Compactions, func(c persistence.Compaction) bool { return c.ID == rec.DeletedCompaction })
			}
			if c := rec.Compaction; c != nil {
				c.SessionID = sessionID
				i := slices.IndexFunc(st.Compactions, func(x persistence.Compaction) bool { return x.ID == c.ID })
				if i >= 0 {
					st.Compactions[i] = *c
				} else {
					st.Compactions = append(st.Compactions, *c)
				}
			}
		}
	}
	for _, id := range order {
		if m, ok := byID[id]; ok {
			st.Messages = append(st.Messages, *m)
		}
	}
	slices.SortFunc(st.Messages, func(a, b persistence.Message) int { return int(a.Seq - b.Seq) })
	return st, nil
}

// StreamedTexts is the text a session's frames streamed for each message,
// by message id: its agent_message_chunk and agent_thought_chunk frames
// naming the message, joined in order. Updates that left their streamed
// text to the frames (persistence.Streamed) are rebuilt from it.
func StreamedTexts(events []persistence.Event) (map[string]persistence.StreamedText, error) {
	texts := make(map[string]*[2]strings.Builder) // content, reasoning
	budget := persistence.NewBudget(persistence.MaxDecoded)
	for i := range events {
		e := &events[i]
		if e.Direction != persistence.DirOut || e.Method != "session/update" {
			continue
		}
		frames, err := e.Frames(budget)
		if err != nil {
			return nil, err
		}
		for _, f := range frames {
			if !bytes.Contains(f, []byte(`_chunk"`)) {
				continue
			}
			var n chunkNotification
			u := &n.Params.Update
			if json.Unmarshal(f, &n) != nil || u.MessageID == "" || u.Content.Type != "text" {
				continue
			}
			t := texts[u.MessageID]
			if t == nil {
				t = new([2]strings.Builder)
				texts[u.MessageID] = t
			}
			switch u.SessionUpdate {
			case "agent_message_chunk":
				t[0].WriteString(u.Content.Text)
			case "agent_thought_chunk":
				t[1].WriteString(u.Content.Text)
			}
		}
	}
	out := make(map[string]persistence.StreamedText, len(texts))
	for id, t := range texts {
		out[id] = persistence.StreamedText{Content: t[0].String(), Reasoning: t[1].String()}
	}
	return out, nil
}

// framesPruned reports whether events, a stream's in seq order, lack some
// of their seqs: frames the retention deleted (seqs are never reused).
func framesPruned(events []persistence.Event) bool {
	for i := range events {
		if events[i].Seq != int64(i)+1 {
			return true
		}
	}
	return false
}

// chunkNotification is what StreamedTexts reads of a session/update frame.
type chunkNotification struct {
	Params struct {
		Update struct {
			SessionUpdate string `json:"sessionUpdate"`
			MessageID     string `json:"messageId"`
			Content       struct {
				Type string `json:"type"`
				Text string `json:"text"`
			} `json:"content"`
		} `json:"update"`
	} `json:"params"`
}

// Report is the outcome of Verify.
type Report struct {
	SessionID   string
	Events      int      // events in the session's log
	Frames      int      // of which raw frames
	Messages    int      // live messages
	Pruned      int      // of which their streamed text left with pruned frames: text not compared
	Differences []string // empty: the live tables equal the rebuild
}

// OK reports whether the live tables equal the rebuild.
func (r *Report) OK() bool { return len(r.Differences) == 0 }

// Store is what Verify reads.
type Store interface {
	Events(ctx context.Context, stream string, f persistence.EventFilter) ([]persistence.Event, error)
	Messages(ctx context.Context, sessionID string, f persistence.MessageFilter) ([]persistence.Message, error)
	Compactions(ctx context.Context, sessionID string) ([]persistence.Compaction, error)
}

// Load rebuilds a session from the store's events.
func Load(ctx context.Context, s Store, sessionID string) (*State, []persistence.Event, error) {
	events, err := s.Events(ctx, sessionID, persistence.EventFilter{})
	if err != nil {
		return nil, nil, err
	}
	st, err := Rebuild(sessionID, events)
	if err != nil {
		return nil, nil, fmt.Errorf("rebuild %s: %w", sessionID, err)
	}
	return st, events, nil
}

// Verify rebuilds a session from its events and lists every difference from
// the live messages and compactions tables.
func Verify(ctx context.Context, s Store, sessionID string) (*Report, error) {
	live, err := s.Messages(ctx, sessionID, persistence.MessageFilter{})
	if err != nil {
		return nil, err
	}
	liveComp, err := s.Compactions(ctx, sessionID)
	if err != nil {
		return nil, err
	}
	st, events, err := Load(ctx, s, sessionID)
	if err != nil {
		return nil, err
	}
	r := &Report{SessionID: sessionID, Events: len(events), Messages: len(live)}
	for _, e := range events {
		if e.Kind.IsFrame() {
			r.Frames++
		}
	}
	rebuilt := make(map[int64]persistence.Message, len(st.Messages))
	for _, m := range st.Messages {
		rebuilt[m.Seq] = m
	}
	for _, m := range live {
		want, ok := rebuilt[m.Seq]
		if !ok {
			r.Differences = append(r.Differences, fmt.Sprintf("message seq %d (%s): in the table, not in the event log", m.Seq, m.Role))
			continue
		}
		delete(rebuilt, m.Seq)
		if st.Pruned[want.ID] {
			r.Pruned++
			want.Content, want.Reasoning = m.Content, m.Reasoning
		}
		for _, d := range diffMessage(want, m) {
			r.Differences = append(r.Differences, fmt.Sprintf("message seq %d: %s", m.Seq, d))
		}
	}
	for _, m := range st.Messages {
		if _, missing := rebuilt[m.Seq]; missing {
			r.Differences = append(r.Differences, fmt.Sprintf("message seq %d (%s): in the event log, not in the table", m.Seq, m.Role))
		}
	}
	if len(liveComp) != len(st.Compactions) {
		r.Differences = append(r.Differences, fmt.Sprintf("%d compactions in the table, %d in the event log", len(liveComp), len(st.Compactions)))
	} else {
		for i := range liveComp {
			if d := diffCompaction(st.Compactions[i], liveComp[i]); d != "" {
				r.Differences = append(r.Differences, fmt.Sprintf("compaction %d: %s", liveComp[i].ID, d))
			}
		}
	}
	return r, nil
}

// diffMessage lists the fields in which the table (got) differs from the
// rebuild (want). Token counts are a cache (SetTokenCounts), not content:
// they are not compared.
func diffMessage(want, got persistence.Message) []string {
	var out []string
	field := func(name string, w, g any) {
		if !reflect.DeepEqual(w, g) {
			out = append(out, fmt.Sprintf("%s: table %v, events %v", name, g, w))
		}
	}
	field("id", want.ID, got.ID)
	field("role", want.Role, got.Role)
	// Event bodies are JSON, which keeps text as persistence.ValidText: a
	// NUL or a stray byte in a tool's output is not a difference.
	text := persistence.ValidText
	field("content", text(want.Content), text(got.Content))
	field("reasoning", text(want.Reasoning), text(got.Reasoning))
	field("toolCallId", text(want.ToolCallID), text(got.ToolCallID))
	field("status", want.Status, got.Status)
	field("isActive", want.IsActive, got.IsActive)
	field("compactedIntoId", deref(want.CompactedIntoID), deref(got.CompactedIntoID))
	if len(want.Parts)+len(got.Parts) > 0 {
		field("parts", want.Parts, got.Parts)
	}
	if len(want.ToolCalls)+len(got.ToolCalls) > 0 {
		field("toolCalls", want.ToolCalls, got.ToolCalls)
	}
	if !jsonEqual(want.Meta, got.Meta) {
		out = append(out, fmt.Sprintf("meta: table %s, events %s", got.Meta, want.Meta))
	}
	if !want.CreatedAt.Equal(got.CreatedAt) {
		out = append(out, fmt.Sprintf("createdAt: table %v, events %v", got.CreatedAt, want.CreatedAt))
	}
	return out
}

func diffCompaction(want, got persistence.Compaction) string {
	switch {
	case want.ID != got.ID, want.Policy != got.Policy, want.TokensBefore != got.TokensBefore,
		want.TokensAfter != got.TokensAfter, deref(want.SummaryMessageID) != deref(got.SummaryMessageID),
		!slices.Equal(want.CompactedIDs, got.CompactedIDs), !slices.Equal(want.KeptIDs, got.KeptIDs),
		!slices.Equal(want.AddedIDs, got.AddedIDs), want.Expanded != got.Expanded,
		want.MessagesBefore != got.MessagesBefore, want.MessagesAfter != got.MessagesAfter,
		!jsonEqual(want.Settings, got.Settings), !want.CreatedAt.Equal(got.CreatedAt):
		return fmt.Sprintf("table %+v, events %+v", got, want)
	}
	return ""
}

func deref(p *int64) int64 {
	if p == nil {
		return 0
	}
	return *p
}

func jsonEqual(a, b json.RawMessage) bool {
	if string(a) == "null" {
		a = nil
	}
	if string(b) == "null" {
		b = nil
	}
	if len(a) == 0 || len(b) == 0 {
		return len(a) == len(b)
	}
	if bytes.Equal(a, b) {
		return true
	}
	var va, vb any
	if json.Unmarshal(a, &va) != nil || json.Unmarshal(b, &vb) != nil {
		return false
	}
	return reflect.DeepEqual(va, vb)
}
