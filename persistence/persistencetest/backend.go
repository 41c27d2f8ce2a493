package persistencetest

import (
	"context"
	"encoding/json"
	"io/fs"
	"slices"
	"strings"
	"testing"
	"testing/fstest"
	"time"

	"github.com/crow-acp/crow-acp/persistence"
)

// The checks below are the same for every backend but need something only
// the backend's own tests can set up or see (its error prefix, a trigger,
// its tables); they call them.

// ErrorsNameTheOperation checks that errors start with the backend's name
// (backend: "sqlite") and the operation that failed.
func ErrorsNameTheOperation(t *testing.T, s persistence.Store, backend string) {
	t.Helper()
	ctx := t.Context()
	for _, c := range []struct {
		err  error
		want string
	}{
		{func() error { _, err := s.GetSession(ctx, "x"); return err }(), "get session"},
		{s.UpdateSession(ctx, &persistence.Session{ID: "x"}), "update session"},
		{s.AppendMessages(ctx, "x", &persistence.Message{}), "append messages"},
		{func() error { _, err := s.Messages(ctx, "x", persistence.MessageFilter{}); return err }(), "messages"},
		{ApplyCompaction(ctx, s, &persistence.Compaction{SessionID: "x"}, nil), "compact"},
		{func() error { _, err := s.Compactions(ctx, "x"); return err }(), "compactions"},
		{func() error {
			_, _, err := s.ListSessions(ctx, persistence.ListSessionsOptions{Cursor: "@"})
			return err
		}(), "list sessions: invalid cursor"},
	} {
		if want := backend + ": " + c.want; c.err == nil || !strings.HasPrefix(c.err.Error(), want) {
			t.Errorf("error %v, want prefix %q", c.err, want)
		}
	}
}

// AppendAtomicMidBatch checks, on a store whose database refuses to insert a
// message with the content "boom" (a trigger the caller installed), that a
// batch failing at its second message rolls back the first one, the seq
// reservation and the UpdatedAt bump. messages counts the rows of the
// messages table.
func AppendAtomicMidBatch(t *testing.T, s persistence.Store, backend string, messages func() (int, error)) {
	t.Helper()
	ctx := t.Context()
	mustCreate(t, s, &persistence.Session{ID: "a"})
	before := mustGet(t, s, "a")

	ok := &persistence.Message{Role: persistence.RoleUser, Content: "fine"}
	bad := &persistence.Message{Role: persistence.RoleUser, Content: "boom"}
	err := s.AppendMessages(ctx, "a", ok, bad)
	if want := backend + ": append messages: message 1: "; err == nil || !strings.HasPrefix(err.Error(), want) {
		t.Fatalf("error = %v, want one wrapped with the operation and the message index", err)
	}
	if ok.ID != 0 || ok.Seq != 0 {
		t.Errorf("rolled-back message was filled: %+v", ok)
	}
	if n, err := messages(); err != nil || n != 0 {
		t.Errorf("%d messages after rollback (%v), want 0", n, err)
	}
	if after := mustGet(t, s, "a"); !after.UpdatedAt.Equal(before.UpdatedAt) {
		t.Error("rollback kept the UpdatedAt bump")
	}
	ok2 := &persistence.Message{Role: persistence.RoleUser, Content: "fine"}
	if err := s.AppendMessages(ctx, "a", ok2); err != nil {
		t.Fatal(err)
	}
	if ok2.Seq != 1 {
		t.Errorf("seq after rollback = %d, want 1", ok2.Seq)
	}
}

// ApplyCompaction is Compact with at most one added message, the summary
// (nil: none): what most tests of compaction need.
func ApplyCompaction(ctx context.Context, s persistence.Store, c *persistence.Compaction, summary *persistence.Message) error {
	var added []*persistence.Message
	if summary != nil {
		added = []*persistence.Message{summary}
	}
	return s.Compact(ctx, c, added)
}

// ExactRoundTrip checks what the contract leaves loose, on a backend that
// keeps times to prec: a time is handed back as it is stored (to prec)
// and read back equal and in UTC, JSON keeps its bytes, and nil and empty
// slices stay apart.
func ExactRoundTrip(t *testing.T, s persistence.Store, prec time.Duration) {
	t.Helper()
	ctx := t.Context()
	at := time.Date(2031, 12, 31, 23, 59, 59, 987654321, time.FixedZone("X", -7*3600))
	kept := at.Truncate(prec)
	meta := json.RawMessage(`{ "b": 1,  "a": [true, null], "b": 2 }`)
	sess := &persistence.Session{ID: "x", CreatedAt: at, UpdatedAt: at.Add(prec), Metadata: meta}
	if err := s.CreateSession(ctx, sess); err != nil {
		t.Fatal(err)
	}
	got := mustGet(t, s, "x")
	if !sess.CreatedAt.Equal(kept) || !got.CreatedAt.Equal(kept) || !got.UpdatedAt.Equal(kept.Add(prec)) || got.CreatedAt.Location() != time.UTC {
		t.Errorf("times handed back %v, read back %v, %v; want %v and +%v, in UTC", sess.CreatedAt, got.CreatedAt, got.UpdatedAt, kept, prec)
	}
	if string(got.Metadata) != string(meta) {
		t.Errorf("Metadata = %s, want the same bytes %s", got.Metadata, meta)
	}
	if err := s.UpdateSession(ctx, sess); err != nil {
		t.Fatal(err)
	}
	if got := mustGet(t, s, "x"); !got.UpdatedAt.Equal(sess.UpdatedAt) {
		t.Errorf("UpdateSession handed back %v, stored %v", sess.UpdatedAt, got.UpdatedAt)
	}

	nilMsg := &persistence.Message{Role: persistence.RoleUser, CreatedAt: at}
	emptyMsg := &persistence.Message{Role: persistence.RoleUser, Parts: []persistence.Part{}, ToolCalls: []persistence.ToolCall{},
		Content: "ünïcödé ✓ \t\n", TokenCount: 1 << 40}
	mustAppend(t, s, "x", nilMsg, emptyMsg)
	msgs := mustMessages(t, s, "x", persistence.MessageFilter{})
	if msgs[0].Parts != nil || msgs[0].ToolCalls != nil || msgs[0].Meta != nil {
		t.Errorf("nil fields came back non-nil: %+v", msgs[0])
	}
	if msgs[1].Parts == nil || msgs[1].ToolCalls == nil {
		t.Errorf("empty slices came back nil: %+v", msgs[1])
	}
	if msgs[1].Content != emptyMsg.Content || msgs[1].TokenCount != 1<<40 {
		t.Errorf("message 2 = %q, %d tokens", msgs[1].Content, msgs[1].TokenCount)
	}
	// A store-assigned time compares equal even with ==.
	if !msgs[0].CreatedAt.Equal(kept) || !nilMsg.CreatedAt.Equal(kept) || msgs[1].CreatedAt != emptyMsg.CreatedAt {
		t.Errorf("message times %v, %v; handed back %v, %v", msgs[0].CreatedAt, msgs[1].CreatedAt, nilMsg.CreatedAt, emptyMsg.CreatedAt)
	}

	c := &persistence.Compaction{SessionID: "x", Policy: "p", CompactedIDs: []int64{}, CreatedAt: at}
	if err := ApplyCompaction(ctx, s, c, nil); err != nil {
		t.Fatal(err)
	}
	cs, err := s.Compactions(ctx, "x")
	if err != nil {
		t.Fatal(err)
	}
	if cs[0].CompactedIDs == nil || cs[0].KeptIDs != nil {
		t.Errorf("CompactedIDs %#v (want empty), KeptIDs %#v (want nil)", cs[0].CompactedIDs, cs[0].KeptIDs)
	}
	if !cs[0].CreatedAt.Equal(kept) || !c.CreatedAt.Equal(kept) {
		t.Errorf("compaction CreatedAt %v, handed back %v; want %v", cs[0].CreatedAt, c.CreatedAt, kept)
	}
}

// Migrations is a backend's migration runner on a database of its own,
// for MigrateFailureRollsBack.
type Migrations struct {
	Migrate  func(fsys fs.FS) error // applies fsys's files under "m"
	Versions func() []int           // schema_migrations, in order
	Tables   func() []string        // the tables there are
	Count    func(table string) int // rows in table
}

// MigrateFailureRollsBack checks that a broken migration leaves nothing of
// itself and names its file, that a file of several statements applies
// whole, that a second run applies nothing, and that a lower version
// arriving after a higher one is still applied.
func MigrateFailureRollsBack(t *testing.T, m Migrations) {
	t.Helper()
	fsys := fstest.MapFS{
		"m/0001_a.sql": {Data: []byte("CREATE TABLE a (x INTEGER);")},
		"m/0002_b.sql": {Data: []byte("CREATE TABLE b (x INTEGER);\nTHIS IS NOT SQL;")},
	}
	if err := m.Migrate(fsys); err == nil || !strings.Contains(err.Error(), "0002_b.sql") {
		t.Fatalf("migrate with a broken file: error = %v, want one naming 0002_b.sql", err)
	}
	if got := m.Versions(); !slices.Equal(got, []int{1}) {
		t.Errorf("schema_migrations = %v, want [1]", got)
	}
	if tables := m.Tables(); !slices.Contains(tables, "a") || slices.Contains(tables, "b") {
		t.Errorf("tables = %v: want a, and no trace of the failed b", tables)
	}
	fsys["m/0002_b.sql"] = &fstest.MapFile{Data: []byte("CREATE TABLE b (x INTEGER);")}
	fsys["m/0003_c.sql"] = &fstest.MapFile{Data: []byte("CREATE TABLE c (x INTEGER); INSERT INTO c VALUES (1), (2);")}
	for _, run := range []string{"after the fix", "again"} {
		if err := m.Migrate(fsys); err != nil {
			t.Fatalf("migrate %s: %v", run, err)
		}
		if got := m.Versions(); !slices.Equal(got, []int{1, 2, 3}) {
			t.Errorf("migrate %s: schema_migrations = %v, want [1 2 3]", run, got)
		}
	}
	if n := m.Count("c"); n != 2 {
		t.Errorf("multi-statement migration: %d rows, want 2", n)
	}
	// Versions are reserved per feature and land in any order.
	for _, f := range []string{"0005_e", "0004_d"} {
		fsys["m/"+f+".sql"] = &fstest.MapFile{Data: []byte("CREATE TABLE " + f[5:] + " (x INTEGER);")}
		if err := m.Migrate(fsys); err != nil {
			t.Fatal(err)
		}
	}
	if got := m.Versions(); !slices.Equal(got, []int{1, 2, 3, 4, 5}) {
		t.Errorf("schema_migrations = %v, want [1 2 3 4 5] (a late lower version applied)", got)
	}
}
