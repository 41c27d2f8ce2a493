package agent

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/crow-acp/crow-acp/acp"
	"github.com/crow-acp/crow-acp/internal/provider/fakemodel"
)

func listedIDs(t *testing.T, a *Agent, archived string) string {
	t.Helper()
	res, err := a.ListSessions(context.Background(), &acp.ListSessionsRequest{Archived: archived})
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, s := range res.Sessions {
		id := s.SessionID
		if s.Archived {
			id += "(archived)"
		}
		ids = append(ids, id)
	}
	return strings.Join(ids, ",")
}

func wantCode(t *testing.T, err error, code int) *acp.Error {
	t.Helper()
	var e *acp.Error
	if !errors.As(err, &e) || e.Code != code {
		t.Fatalf("error %v, want code %d", err, code)
	}
	return e
}

// The user's title replaces the generated one and is never replaced by a
// generated one, even one the model names after a title equal to the
// local one; it survives in the store.
func TestUserTitleWins(t *testing.T) {
	ctx := context.Background()
	a, rec, m := newTestAgent(t, Config{Model: "m", ModelTitles: true}, fakemodel.Reply{Text: "ok"})
	s, err := a.NewSession(ctx, &acp.NewSessionRequest{Cwd: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	res, err := a.SetSessionTitle(ctx, &acp.SetSessionTitleRequest{SessionID: s.SessionID, Title: "  Payment\tretries \x1b[31m "})
	if err != nil || res.Title != "Payment retries [31m" {
		t.Fatalf("set_title: %+v %v", res, err)
	}
	// A titled session gets no local title and asks the model for none.
	if _, err := a.Prompt(ctx, &acp.PromptRequest{SessionID: s.SessionID, Prompt: []acp.ContentBlock{acp.TextBlock("fix it")}}); err != nil {
		t.Fatal(err)
	}
	if n := len(m.Requests()); n != 1 {
		t.Fatalf("%d model requests, want 1 (no title request)", n)
	}
	stored, _ := a.store.GetSession(ctx, s.SessionID)
	if a.turns.setTitle(ctx, a.sessions.get(stored.ID), stored, stored.Title, "Generated") {
		t.Fatal("a generated title replaced the user's")
	}
	stored, _ = a.store.GetSession(ctx, s.SessionID)
	if stored.Title != "Payment retries [31m" {
		t.Fatalf("stored title %q", stored.Title)
	}
	if got := rec.titles(); len(got) != 1 || got[0] != "Payment retries [31m" {
		t.Fatalf("session_info_update titles %q", got)
	}

	wantCode(t, mustFail(a.SetSessionTitle(ctx, &acp.SetSessionTitleRequest{SessionID: s.SessionID, Title: "\x00\n\t"})), acp.CodeInvalidParams)
	e := wantCode(t, mustFail(a.SetSessionTitle(ctx, &acp.SetSessionTitleRequest{SessionID: "sess_nope", Title: "x"})), acp.CodeResourceNotFound)
	if d, _ := e.Data.(map[string]string); d["sessionId"] != "sess_nope" {
		t.Fatalf("-32002 without the session id in data: %+v", e.Data)
	}
	if long := strings.Repeat("é", 500); len([]rune(NormalizeTitle(long))) != MaxUserTitleRunes {
		t.Fatal("a long title is not cut")
	}
}

func mustFail[R any](_ R, err error) error { return err }

// Archiving hides a session from session/list unless asked, frees it
// like session/close, and is undone by unarchive; status tells an open
// session from a saved one without opening it.
func TestArchiveAndStatus(t *testing.T) {
	ctx := context.Background()
	a, _, _ := newTestAgent(t, Config{Model: "m"}, fakemodel.Reply{Text: "one"}, fakemodel.Reply{Text: "two"})
	var ids []string
	for _, text := range []string{"first", "second"} {
		s, err := a.NewSession(ctx, &acp.NewSessionRequest{Cwd: t.TempDir()})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := a.Prompt(ctx, &acp.PromptRequest{SessionID: s.SessionID, Prompt: []acp.ContentBlock{acp.TextBlock(text)}}); err != nil {
			t.Fatal(err)
		}
		ids = append(ids, s.SessionID)
	}
	first, second := ids[0], ids[1]
	status := func(id string) string {
		t.Helper()
		res, err := a.SessionStatus(ctx, &acp.SessionStatusRequest{SessionID: id})
		if err != nil {
			t.Fatal(err)
		}
		return res.Status
	}
	if got := status(first); got != acp.SessionOpen {
		t.Fatalf("status of a new session: %s", got)
	}
	for range 2 { // archiving twice succeeds
		if _, err := a.ArchiveSession(ctx, &acp.ArchiveSessionRequest{SessionID: first}); err != nil {
			t.Fatal(err)
		}
	}
	if got := status(first); got != acp.SessionSaved {
		t.Fatalf("status of an archived session: %s, want saved (archiving closes it)", got)
	}
	a.sessions.mu.Lock()
	_, kept := a.sessions.m[first]
	a.sessions.mu.Unlock()
	if kept {
		t.Fatal("session/status or archive left state behind")
	}
	if got := listedIDs(t, a, ""); got != second {
		t.Fatalf("default list: %s", got)
	}
	if got := listedIDs(t, a, acp.ArchivedExclude); got != second {
		t.Fatalf("exclude: %s", got)
	}
	if got := listedIDs(t, a, acp.ArchivedOnly); got != first+"(archived)" {
		t.Fatalf("only: %s", got)
	}
	if got := listedIDs(t, a, acp.ArchivedInclude); got != first+"(archived),"+second && got != second+","+first+"(archived)" {
		t.Fatalf("include: %s", got)
	}
	if _, err := a.UnarchiveSession(ctx, &acp.UnarchiveSessionRequest{SessionID: first}); err != nil {
		t.Fatal(err)
	}
	if got := listedIDs(t, a, ""); !strings.Contains(got, first) || strings.Contains(got, "archived") {
		t.Fatalf("after unarchive: %s", got)
	}
	wantCode(t, mustFail(a.ArchiveSession(ctx, &acp.ArchiveSessionRequest{SessionID: "sess_nope"})), acp.CodeResourceNotFound)
	wantCode(t, mustFail(a.UnarchiveSession(ctx, &acp.UnarchiveSessionRequest{SessionID: "sess_nope"})), acp.CodeResourceNotFound)
	wantCode(t, mustFail(a.SessionStatus(ctx, &acp.SessionStatusRequest{SessionID: "sess_nope"})), acp.CodeResourceNotFound)
	wantCode(t, (&acp.ListSessionsRequest{Archived: "_mine"}).Validate(), acp.CodeInvalidParams)
}
