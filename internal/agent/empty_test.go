package agent

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/crow-acp/crow-acp/acp"
	"github.com/crow-acp/crow-acp/internal/persistence"
	"github.com/crow-acp/crow-acp/internal/provider/fakemodel"
)

// Zed opens a session for every thread view. Sessions without a message
// are not listed, and once older than the TTL, those no live process
// holds are deleted; one open here stays (issue 15 item 4).
func TestEmptySessionsAreHiddenAndCleanedUp(t *testing.T) {
	ctx := context.Background()
	a, _, _ := newTestAgent(t, Config{Model: "m", EmptySessionTTL: time.Nanosecond, ListPageSize: 2},
		fakemodel.Reply{Text: "Hello."}, fakemodel.Reply{Text: "Again."})
	open, err := a.NewSession(ctx, &acp.NewSessionRequest{Cwd: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	talked, err := a.NewSession(ctx, &acp.NewSessionRequest{Cwd: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a.Prompt(ctx, &acp.PromptRequest{SessionID: talked.SessionID, Prompt: []acp.ContentBlock{acp.TextBlock("hi")}}); err != nil {
		t.Fatal(err)
	}
	// Left by processes gone long ago: never prompted, no lease. More of
	// them than a page holds, so the listing must read past them.
	var stale []string
	for i := range 5 {
		s := &persistence.Session{ID: fmt.Sprintf("sess_stale%d", i), Cwd: "/p",
			CreatedAt: time.Now().Add(-48 * time.Hour), UpdatedAt: time.Now().Add(-48 * time.Hour)}
		if err := a.store.CreateSession(ctx, s); err != nil {
			t.Fatal(err)
		}
		stale = append(stale, s.ID)
	}

	var listed []string
	cursor := ""
	for {
		res, err := a.ListSessions(ctx, &acp.ListSessionsRequest{Cursor: cursor})
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range res.Sessions {
			listed = append(listed, s.SessionID)
		}
		if res.NextCursor == "" {
			break
		}
		cursor = res.NextCursor
	}
	if len(listed) != 1 || listed[0] != talked.SessionID {
		t.Fatalf("listed %v, want only the prompted session %s", listed, talked.SessionID)
	}
	for _, id := range stale {
		if _, err := a.store.GetSession(ctx, id); !errors.Is(err, persistence.ErrNotFound) {
			t.Errorf("stale empty session %s not deleted: %v", id, err)
		}
	}
	if _, err := a.store.GetSession(ctx, open.SessionID); err != nil {
		t.Errorf("the empty session open in this process was deleted: %v", err)
	}
	// Prompting it later still works, and from then on it is listed.
	if _, err := a.Prompt(ctx, &acp.PromptRequest{SessionID: open.SessionID, Prompt: []acp.ContentBlock{acp.TextBlock("now")}}); err != nil {
		t.Fatal(err)
	}
	res, err := a.ListSessions(ctx, &acp.ListSessionsRequest{})
	if err != nil || len(res.Sessions) != 2 {
		t.Fatalf("after its first prompt: %+v, %v; want both sessions", res, err)
	}
}

// An untitled session with a history (a prompt of only an image, a title
// that could not be stored, an import) is listed after reading one of its
// messages, not all of them: a listing reads every untitled session it
// shows, and a long one held 10,000.
func TestListReadsOneMessageOfUntitledSession(t *testing.T) {
	ctx := context.Background()
	store := &readCounter{Store: newTestStore(t)}
	if err := store.CreateSession(ctx, &persistence.Session{ID: "sess_untitled", Cwd: "/p"}); err != nil {
		t.Fatal(err)
	}
	var msgs []*persistence.Message
	for i := range 200 {
		msgs = append(msgs, &persistence.Message{Role: persistence.RoleUser, Content: fmt.Sprint("message ", i)})
	}
	if err := store.AppendMessages(ctx, "sess_untitled", msgs...); err != nil {
		t.Fatal(err)
	}
	list, _, empty, err := ListNonEmpty(ctx, store, persistence.ListSessionsOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(list) != 1 || list[0].ID != "sess_untitled" || len(empty) != 0 {
		t.Fatalf("listed %+v, empty %+v; want the untitled session with messages listed", list, empty)
	}
	if n := store.rows.Load(); n != 1 {
		t.Errorf("listing read %d message rows, want 1", n)
	}
}
