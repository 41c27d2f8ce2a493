package agent

import (
	"context"
	"encoding/json"
	"errors"
	"testing"

	"github.com/crow-acp/crow-acp/acp"
	"github.com/crow-acp/crow-acp/internal/persistence"
	"github.com/crow-acp/crow-acp/internal/provider"
	"github.com/crow-acp/crow-acp/internal/provider/fakemodel"
)

// keptFrames is a FrameLog whose frame log is on or off.
type keptFrames struct{ on bool }

func (keptFrames) Record(context.Context, string, persistence.EventKind, any) {}
func (k keptFrames) Recording() bool                                          { return k.on }

// losingClient fails to deliver its third session/update.
type losingClient struct {
	recorder
	n int
}

func (c *losingClient) SessionUpdate(ctx context.Context, n *acp.SessionNotification) error {
	if c.n++; c.n == 3 {
		return errors.New("broken pipe")
	}
	return c.recorder.SessionUpdate(ctx, n)
}

// TestStreamedTextLeftToFramesOnlyWhenKept: a reply's records leave its
// text to the chunk frames only when every chunk was delivered and the
// connection's frames are kept; otherwise the records hold the text.
func TestStreamedTextLeftToFramesOnlyWhenKept(t *testing.T) {
	for _, tc := range []struct {
		name    string
		journal FrameLog
		lose    bool
		want    bool // the final record names streamed bytes
	}{
		{"frames kept", keptFrames{on: true}, false, true},
		{"no journal", nil, false, false},
		{"journal off", keptFrames{on: false}, false, false},
		{"a chunk lost", keptFrames{on: true}, true, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			store := newTestStore(t)
			m := fakemodel.Start()
			t.Cleanup(m.Close)
			m.Enqueue(fakemodel.Reply{Text: "one two three four five six seven eight", Reasoning: "a thought"})
			var client acp.Client = &recorder{}
			if tc.lose {
				client = &losingClient{}
			}
			a := New(client, store, newTestModel(m), Config{Model: "m", FrameLog: tc.journal}, nil)
			s, err := a.NewSession(ctx, &acp.NewSessionRequest{Cwd: t.TempDir()})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := a.Prompt(ctx, &acp.PromptRequest{SessionID: s.SessionID, Prompt: []acp.ContentBlock{acp.TextBlock("count")}}); err != nil {
				t.Fatal(err)
			}
			evs, err := store.Events(ctx, s.SessionID, persistence.EventFilter{})
			if err != nil {
				t.Fatal(err)
			}
			var last persistence.MessageRecord
			for _, e := range evs {
				if e.Kind == persistence.EventMessageUpdated {
					last = persistence.MessageRecord{}
					if err := json.Unmarshal(e.Body, &last); err != nil {
						t.Fatal(err)
					}
				}
			}
			if got := last.ContentStreamed > 0 && last.ReasoningStreamed > 0; got != tc.want {
				t.Fatalf("final record %+v: streamed bytes named = %v, want %v", last, got, tc.want)
			}
			if !tc.want && (last.ContentStreamed != 0 || last.ReasoningStreamed != 0) {
				t.Fatalf("record names streamed bytes the frames do not hold: %+v", last)
			}
		})
	}
}

// TestStreamedStopsAtAnInvalidChunk: a chunk that is not valid UTF-8 (a
// delta cut inside a character) reaches its frame as U+FFFD, not as the
// stored bytes: from there on the reply's text stays in its records.
func TestStreamedStopsAtAnInvalidChunk(t *testing.T) {
	r := &partialReply{a: &core{cfg: Config{FrameLog: keptFrames{on: true}}}}
	for _, chunk := range []string{"the euro sign ", "\xe2\x82", "\xac"} {
		r.text.WriteString(chunk)
		r.sent(provider.Event{Kind: provider.EventText, Text: chunk}, true)
		if chunk == "the euro sign " && r.streamed.Content != len(chunk) {
			t.Fatalf("valid chunk: streamed %d", r.streamed.Content)
		}
	}
	m := &persistence.Message{Content: r.text.String()}
	if got := r.streamedOf(m); got.Content != 0 {
		t.Fatalf("after a cut character: %d bytes left to the frames, want none", got.Content)
	}
}
