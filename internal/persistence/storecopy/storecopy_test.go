package storecopy

import (
	"bytes"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/crow-acp/crow-acp/internal/persistence"
	"github.com/crow-acp/crow-acp/internal/persistence/persistencetest"
	"github.com/crow-acp/crow-acp/internal/persistence/postgres"
	"github.com/crow-acp/crow-acp/internal/persistence/postgres/pgtest"
	"github.com/crow-acp/crow-acp/internal/persistence/projection"
	"github.com/crow-acp/crow-acp/internal/persistence/sqlite"
)

func openSQLite(t *testing.T) persistence.Store {
	s, err := sqlite.Open(t.Context(), filepath.Join(t.TempDir(), "crow.db"))
	return persistencetest.Opened(t, s, err)
}

func openPostgres(t *testing.T) persistence.Store {
	s, err := postgres.Open(t.Context(), pgtest.URL(t))
	return persistencetest.Opened(t, s, err)
}

// TestCopy copies between every pair of backends available.
func TestCopy(t *testing.T) {
	backends := map[string]func(t *testing.T) persistence.Store{"sqlite": openSQLite, "postgres": openPostgres}
	for _, from := range []string{"sqlite", "postgres"} {
		for _, to := range []string{"sqlite", "postgres"} {
			t.Run(from+"_to_"+to, func(t *testing.T) {
				src, dst := backends[from](t), backends[to](t)
				testCopy(t, src, dst)
			})
		}
	}
}

func testCopy(t *testing.T, src, dst persistence.Store) {
	ctx := t.Context()
	ids := []string{"alpha", "beta", "gamma"}
	for _, id := range ids {
		persistencetest.RichSession(t, src, id)
	}
	// A session with nothing in it, and one with a nanosecond time (kept
	// to the microsecond by PostgreSQL).
	odd := time.Date(2026, 1, 2, 3, 4, 5, 123456789, time.UTC)
	must(t, src.CreateSession(ctx, &persistence.Session{ID: "empty", CreatedAt: odd, UpdatedAt: odd}))
	ids = append(ids, "empty")
	// Text PostgreSQL cannot keep as it is (a tool's binary output).
	must(t, src.CreateSession(ctx, &persistence.Session{ID: "odd", Title: "bin\x00\xff"}))
	must(t, src.AppendMessages(ctx, "odd", &persistence.Message{Role: persistence.RoleTool, Content: "ELF\x00\x01\xfe"}))
	ids = append(ids, "odd")
	// The event log: frames and lifecycle facts, byte for byte.
	for _, id := range []string{"alpha", "beta"} {
		must(t, src.AppendEvents(ctx, historyEvents(id)...))
	}
	// Copied by an earlier run interrupted after the first event: skipped as
	// identical, its remaining events copied.
	d, err := persistence.Dump(ctx, src, "alpha")
	if err != nil {
		t.Fatal(err)
	}
	must(t, dst.ImportSession(ctx, d))
	must(t, dst.AppendEvents(ctx, historyEvents("alpha")[0]))
	// Another session of the same id, created in the destination
	// independently: a conflict, left alone.
	persistencetest.RichSession(t, dst, "delta")
	persistencetest.RichSession(t, src, "delta")

	// Permission rules of the sessions' projects; one the destination has
	// decided the other way.
	for _, r := range []*persistence.PermissionRule{
		{Cwd: "/w/beta", Key: "edit", Allow: true, SessionID: "beta", CreatedAt: time.Date(2026, 2, 3, 4, 5, 6, 0, time.UTC)},
		{Cwd: "/w/alpha", Key: "command:rm", Allow: false},
		{Cwd: "/w/no-sessions", Key: "command:make", Allow: true}, // a project whose sessions were deleted
	} {
		must(t, src.SetPermissionRule(ctx, r))
	}
	must(t, dst.SetPermissionRule(ctx, &persistence.PermissionRule{Cwd: "/w/alpha", Key: "command:rm", Allow: true}))

	var seen []string
	report, err := Copy(ctx, dst, src, func(id, outcome string) { seen = append(seen, id+":"+outcome) })
	if !errors.Is(err, ErrConflicts) {
		t.Fatalf("Copy error = %v, want ErrConflicts for delta", err)
	}
	if want := []string{"alpha:identical", "beta:copied", "delta:conflict", "empty:copied", "gamma:copied", "odd:copied"}; !slices.Equal(seen, want) {
		t.Errorf("progress = %v, want %v", seen, want)
	}
	// alpha, beta and gamma are rich sessions, odd has one message.
	msgs, comps := 3*persistencetest.RichSessionMessages+1, 3*persistencetest.RichSessionCompactions
	if report.Sessions != 6 || report.Copied != 4 || report.Identical != 1 || report.Messages != msgs ||
		report.Compactions != comps || !slices.Equal(report.Conflicts, []string{"delta"}) {
		t.Errorf("report = %+v; want 6 sessions, 4 copied, 1 identical, %d messages, %d compactions, conflict delta",
			report, msgs, comps)
	}
	if report.Rules != 3 || !slices.Equal(report.RuleConflicts, []string{"/w/alpha: command:rm"}) {
		t.Errorf("rules: %d copied or present, conflicts %v; want 3 and /w/alpha: command:rm", report.Rules, report.RuleConflicts)
	}
	if rules, err := dst.PermissionRules(ctx, "/w/no-sessions"); err != nil || len(rules) != 1 || rules[0].Key != "command:make" {
		t.Errorf("the rule of a project without sessions: %+v, %v", rules, err)
	}
	// The rule keeps when and in which session it was granted.
	if rules, err := dst.PermissionRules(ctx, "/w/beta"); err != nil || len(rules) != 1 || !rules[0].Allow || rules[0].Key != "edit" ||
		rules[0].SessionID != "beta" || !rules[0].CreatedAt.Equal(time.Date(2026, 2, 3, 4, 5, 6, 0, time.UTC)) {
		t.Errorf("destination rules of /w/beta: %+v, %v", rules, err)
	}
	if rules, _ := dst.PermissionRules(ctx, "/w/alpha"); len(rules) != 1 || !rules[0].Allow {
		t.Errorf("the conflicting rule was overwritten: %+v", rules)
	}
	if report.Events != 2*len(historyEvents("")) {
		t.Errorf("report.Events = %d, want %d", report.Events, 2*len(historyEvents("")))
	}
	for _, id := range ids {
		srcEv, err := history(ctx, src, id)
		if err != nil {
			t.Fatal(err)
		}
		dstEv, err := history(ctx, dst, id)
		if err != nil {
			t.Fatal(err)
		}
		if len(srcEv) != len(dstEv) {
			t.Errorf("%s: %d events copied, source has %d", id, len(dstEv), len(srcEv))
		}
		for i := range min(len(srcEv), len(dstEv)) {
			if !sameEvent(srcEv[i], dstEv[i]) || !bytes.Equal(srcEv[i].Body, dstEv[i].Body) {
				t.Errorf("%s: event %d = %+v, source %+v", id, i, dstEv[i], srcEv[i])
			}
		}
		// The destination's projection is consistent with its tables.
		if r, err := projection.Verify(ctx, dst, id); err != nil || !r.OK() {
			t.Errorf("%s: projection after copy: %+v, %v", id, r, err)
		}
		a, err := persistence.Dump(ctx, src, id)
		if err != nil {
			t.Fatal(err)
		}
		b, err := persistence.Dump(ctx, dst, id)
		if err != nil {
			t.Fatalf("%s not in the destination: %v", id, err)
		}
		if da, db := digest(t, a), digest(t, b); da != db {
			t.Errorf("%s: digests differ", id)
		}
		// The copy is a working session: appends continue its seqs.
		m := &persistence.Message{Role: persistence.RoleUser, Content: "more"}
		if err := dst.AppendMessages(ctx, id, m); err != nil || m.Seq != a.LastSeq()+1 {
			t.Errorf("%s: append after copy: seq %d, %v; want %d", id, m.Seq, err, a.LastSeq()+1)
		}
	}

	// Run again: the appended sessions now differ, and are reported as
	// conflicts, not overwritten.
	report, err = Copy(ctx, dst, src, nil)
	if !errors.Is(err, ErrConflicts) || len(report.Conflicts) != 6 {
		t.Fatalf("second Copy = %+v, %v; want 6 conflicts and ErrConflicts", report, err)
	}
	if msgs, _ := dst.Messages(ctx, "beta", persistence.MessageFilter{}); len(msgs) == 0 || msgs[len(msgs)-1].Content != "more" {
		t.Error("a conflicting session was overwritten")
	}
}

func TestCopyEmptySource(t *testing.T) {
	report, err := Copy(t.Context(), openSQLite(t), openSQLite(t), nil)
	if err != nil || report.Sessions != 0 || report.Copied != 0 {
		t.Errorf("Copy(empty) = %+v, %v", report, err)
	}
}

// TestCopyManySessions pages through more sessions than one ListSessions
// page holds.
func TestCopyManySessions(t *testing.T) {
	src, dst := openSQLite(t), openSQLite(t)
	ctx := t.Context()
	n := persistence.MaxListLimit + 7
	for i := range n {
		id := fmt.Sprintf("s%04d", i)
		must(t, src.CreateSession(ctx, &persistence.Session{ID: id}))
		must(t, src.AppendMessages(ctx, id, &persistence.Message{Role: persistence.RoleUser, Content: id}))
	}
	report, err := Copy(ctx, dst, src, nil)
	if err != nil || report.Copied != n || report.Messages != n {
		t.Fatalf("Copy = %+v, %v; want %d sessions with one message each", report, err, n)
	}
}

func digest(t *testing.T, d *persistence.SessionDump) string {
	t.Helper()
	s, err := persistence.Digest(d)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// historyEvents are a session's frames and lifecycle events, one of each
// shape, with a body no JSON round trip would keep.
func historyEvents(stream string) []*persistence.Event {
	at := time.Date(2026, 5, 6, 7, 8, 9, 123456000, time.UTC)
	return []*persistence.Event{
		{Stream: stream, ConnectionID: "conn_a", At: at, Direction: persistence.DirIn, Turn: 1,
			Kind: persistence.EventRequest, Method: "session/prompt", Body: []byte(`{"jsonrpc":"2.0","id":7,  "method":"session/prompt"}`)},
		{Stream: stream, ConnectionID: "conn_a", At: at.Add(time.Millisecond), Turn: 1, Kind: persistence.EventTurnStarted, Body: []byte(`{}`)},
		{Stream: stream, ConnectionID: "conn_a", At: at.Add(2 * time.Millisecond), Direction: persistence.DirOut, Turn: 1,
			Kind: persistence.EventInvalid, Body: []byte("not json \xff")},
	}
}

// TestCopyPackedRuns: streamed runs stored packed with the records saved
// after them (which migrate does not copy) arrive the same frames,
// whatever the page size.
func TestCopyPackedRuns(t *testing.T) {
	ctx := t.Context()
	for _, page := range []int{2, 3, 5000} {
		t.Run(fmt.Sprint(page), func(t *testing.T) {
			defer func(n int) { historyPage = n }(historyPage)
			historyPage = page
			src, dst := openSQLite(t), openSQLite(t)
			must(t, src.CreateSession(ctx, &persistence.Session{ID: "s", Cwd: "/w"}))
			m := &persistence.Message{Role: persistence.RoleAssistant, Status: persistence.StatusStreaming}
			var runs [][]byte
			for i := range 3 {
				text := persistencetest.Prose(uint64(i), 2000)
				run := persistencetest.StreamedRun("s", text)
				runs = append(runs, run)
				w := src.(persistence.Recorder).WithOrigin(persistence.Origin{ConnectionID: "c", Turn: 1, Pending: []*persistence.Event{
					{Stream: "s", ConnectionID: "c", Direction: persistence.DirOut, Turn: 1, Kind: persistence.EventNotification, Method: "session/update", Body: run}}})
				m.Content += text
				var err error
				if i == 0 {
					err = w.AppendMessages(ctx, "s", m)
				} else {
					err = w.UpdateMessage(ctx, m)
				}
				if err != nil {
					t.Fatal(err)
				}
			}
			evs, err := src.Events(ctx, "s", persistence.EventFilter{})
			if err != nil {
				t.Fatal(err)
			}
			if bytes.HasPrefix(evs[0].Body, []byte("{")) {
				t.Fatal("the source's run is not packed: nothing to test")
			}
			if _, err := Copy(ctx, dst, src, nil); err != nil {
				t.Fatal(err)
			}
			got, err := dst.Events(ctx, "s", persistence.EventFilter{})
			if err != nil {
				t.Fatal(err)
			}
			var copied [][]byte
			for _, e := range got {
				if e.Kind != persistence.EventNotification {
					continue
				}
				fs, err := e.Frames(persistence.NewBudget(persistence.MaxDecoded))
				if err != nil {
					t.Fatal(err)
				}
				copied = append(copied, bytes.Join(fs, []byte("\n")))
			}
			if len(copied) != len(runs) {
				t.Fatalf("%d runs copied, want %d", len(copied), len(runs))
			}
			for i := range runs {
				if !bytes.Equal(copied[i], runs[i]) {
					t.Errorf("run %d reads back %.200q, want %.200q", i, copied[i], runs[i])
				}
			}
		})
	}
}

// must fails t on err.
func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
