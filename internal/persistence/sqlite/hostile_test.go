package sqlite

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/crow-acp/crow-acp/internal/persistence"
)

// Values that would break a query built by splicing text are stored and read
// back unchanged, and the schema survives them.
func TestHostileValuesRoundTrip(t *testing.T) {
	ctx := context.Background()
	s := mustOpen(t, filepath.Join(t.TempDir(), "crow.db"))
	hostile := []string{
		`x'); DROP TABLE messages; --`,
		`" OR 1=1 --`,
		"line\nbreak\x00nul",
		`%_\` + "`",
	}
	for i, v := range hostile {
		sess := &persistence.Session{ID: "sess_" + v, Cwd: "/tmp/" + v, Title: v}
		if err := s.CreateSession(ctx, sess); err != nil {
			t.Fatalf("%d: create: %v", i, err)
		}
		if err := s.AppendMessages(ctx, sess.ID, &persistence.Message{Role: persistence.RoleUser, Content: v,
			ToolCallID: v, Status: persistence.StatusComplete}); err != nil {
			t.Fatalf("%d: append: %v", i, err)
		}
		got, err := s.GetSession(ctx, sess.ID)
		if err != nil || got.Cwd != sess.Cwd || got.Title != v {
			t.Fatalf("%d: session came back as %+v (%v)", i, got, err)
		}
		msgs, err := s.Messages(ctx, sess.ID, persistence.MessageFilter{})
		if err != nil || len(msgs) != 1 || msgs[0].Content != v {
			t.Fatalf("%d: messages %+v (%v)", i, msgs, err)
		}
		list, _, err := s.ListSessions(ctx, persistence.ListSessionsOptions{Cwd: sess.Cwd})
		if err != nil || len(list) != 1 || list[0].ID != sess.ID {
			t.Fatalf("%d: list by a hostile cwd: %+v (%v)", i, list, err)
		}
	}
	all, _, err := s.ListSessions(ctx, persistence.ListSessionsOptions{})
	if err != nil || len(all) != len(hostile) {
		t.Fatalf("sessions after hostile input: %d (%v)", len(all), err)
	}
}
