package persistencetest

import (
	"bytes"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/crow-acp/crow-acp/internal/persistence"
	"github.com/crow-acp/crow-acp/internal/persistence/projection"
)

var checkpointTests = []storeTest{
	{"CheckpointFirstWins", testCheckpointFirstWins},
	{"CheckpointLimits", testCheckpointLimits},
	{"CheckpointDeletedWithSession", testCheckpointDeletedWithSession},
	{"UndoHidesAndRedoes", testUndoHidesAndRedoes},
	{"UndoRedoAfterNewMessages", testUndoRedoAfterNewMessages},
	{"UndoShowsCompacted", testUndoShowsCompacted},
	{"CheckpointsImported", testCheckpointsImported},
}

func checkpointStore(t *testing.T, s persistence.Store) persistence.CheckpointStore {
	t.Helper()
	cs, ok := s.(persistence.CheckpointStore)
	if !ok {
		t.Skip("the store keeps no checkpoints")
	}
	return cs
}

func fileCheckpoint(session string, turn int64, path string) *persistence.Checkpoint {
	return &persistence.Checkpoint{SessionID: session, Turn: turn, Kind: persistence.CheckpointFile, Path: path,
		Before: persistence.FileState{Exists: true, Mode: 0o644}}
}

func testCheckpointFirstWins(t *testing.T, s persistence.Store) {
	ctx := t.Context()
	cs := checkpointStore(t, s)
	must(t, s.CreateSession(ctx, &persistence.Session{ID: "c", Cwd: "/p"}))
	if _, err := cs.SaveCheckpoint(ctx, fileCheckpoint("nope", 1, "a"), []byte("x"), persistence.CheckpointLimits{}); !errors.Is(err, persistence.ErrNotFound) {
		t.Fatalf("unknown session: %v, want ErrNotFound", err)
	}
	first := []byte("first\x00\xff bytes")
	c := fileCheckpoint("c", 1, "dir/a.txt")
	saved, err := cs.SaveCheckpoint(ctx, c, first, persistence.CheckpointLimits{})
	if err != nil || !saved || c.ID == 0 || c.Before.Hash != persistence.Hash(first) || c.Size != int64(len(first)) {
		t.Fatalf("SaveCheckpoint = %v, %v, %+v", saved, err, c)
	}
	again := fileCheckpoint("c", 1, "dir/a.txt")
	if saved, err := cs.SaveCheckpoint(ctx, again, []byte("second"), persistence.CheckpointLimits{}); err != nil || saved || again.ID != 0 {
		t.Fatalf("second checkpoint of a file in one turn = %v, %v, %+v; want not saved", saved, err, again)
	}
	// The same content in a later turn is stored once; an absent file
	// keeps no bytes.
	save(t, cs, fileCheckpoint("c", 3, "dir/a.txt"), first, persistence.CheckpointLimits{})
	absent := &persistence.Checkpoint{SessionID: "c", Turn: 3, Kind: persistence.CheckpointFile, Path: "new.txt"}
	save(t, cs, absent, nil, persistence.CheckpointLimits{})
	tree := &persistence.Checkpoint{SessionID: "c", Turn: 3, Kind: persistence.CheckpointTree, Before: persistence.FileState{Exists: true, Hash: "abc123"}}
	save(t, cs, tree, nil, persistence.CheckpointLimits{})
	must(t, cs.SetCheckpointAfter(ctx, "c", 3, "new.txt", persistence.FileState{Exists: true, Mode: 0o755, Hash: persistence.Hash([]byte("n"))}))
	if err := cs.SetCheckpointAfter(ctx, "c", 9, "new.txt", persistence.FileState{}); !errors.Is(err, persistence.ErrNotFound) {
		t.Errorf("SetCheckpointAfter of no checkpoint: %v, want ErrNotFound", err)
	}

	all, err := cs.Checkpoints(ctx, "c", 0)
	must(t, err)
	if len(all) != 4 || !slices.IsSortedFunc(all, func(a, b persistence.Checkpoint) int { return int(a.ID - b.ID) }) {
		t.Fatalf("Checkpoints = %+v, want 4 by id", all)
	}
	if all[0].Path != "dir/a.txt" || all[0].Before.Mode != 0o644 || all[0].After != nil || all[0].Kind != persistence.CheckpointFile {
		t.Errorf("first checkpoint = %+v", all[0])
	}
	if a := all[2]; a.Before.Exists || a.After == nil || !a.After.Exists || a.After.Mode != 0o755 {
		t.Errorf("absent file's checkpoint = %+v, after %+v", a, a.After)
	}
	if all[3].Kind != persistence.CheckpointTree || all[3].Before.Hash != "abc123" {
		t.Errorf("tree checkpoint = %+v", all[3])
	}
	later, err := cs.Checkpoints(ctx, "c", 2)
	must(t, err)
	if len(later) != 3 || later[0].Turn != 3 {
		t.Errorf("Checkpoints from turn 2 = %+v", later)
	}
	got, err := cs.Blob(ctx, "c", persistence.Hash(first))
	if err != nil || !bytes.Equal(got, first) {
		t.Errorf("Blob = %q, %v", got, err)
	}
	if _, err := cs.Blob(ctx, "c", persistence.Hash([]byte("second"))); !errors.Is(err, persistence.ErrNotFound) {
		t.Errorf("the losing checkpoint's bytes were kept: %v", err)
	}
	st, err := cs.CheckpointStats(ctx, "c")
	if err != nil || st.Files != 3 || st.Trees != 1 || st.Bytes != int64(len(first)) {
		t.Errorf("CheckpointStats = %+v, %v; want 3 files, 1 tree, %d bytes (stored once)", st, err, len(first))
	}
}

func save(t *testing.T, cs persistence.CheckpointStore, c *persistence.Checkpoint, data []byte, l persistence.CheckpointLimits) {
	t.Helper()
	if _, err := cs.SaveCheckpoint(t.Context(), c, data, l); err != nil {
		t.Fatal(err)
	}
}

func testCheckpointLimits(t *testing.T, s persistence.Store) {
	ctx := t.Context()
	cs := checkpointStore(t, s)
	must(t, s.CreateSession(ctx, &persistence.Session{ID: "l"}))
	l := persistence.CheckpointLimits{File: 10, Session: 25}
	big := fileCheckpoint("l", 1, "big")
	if saved, err := cs.SaveCheckpoint(ctx, big, bytes.Repeat([]byte("b"), 11), l); err != nil || !saved || big.Unrestorable == "" {
		t.Fatalf("over the file limit: %v, %v, %+v; want saved as not restorable", saved, err, big)
	}
	for i, name := range []string{"one", "two"} {
		c := fileCheckpoint("l", 1, name)
		save(t, cs, c, bytes.Repeat([]byte{byte('0' + i)}, 10), l)
		if c.Unrestorable != "" {
			t.Fatalf("%s within the limits: %q", name, c.Unrestorable)
		}
	}
	third := fileCheckpoint("l", 1, "three")
	save(t, cs, third, bytes.Repeat([]byte("3"), 10), l)
	if !strings.Contains(third.Unrestorable, "limit") {
		t.Errorf("over the session's total: %q, want not restorable", third.Unrestorable)
	}
	if _, err := cs.PutBlob(ctx, "l", bytes.Repeat([]byte("4"), 6), l); !errors.Is(err, persistence.ErrBlobLimit) {
		t.Errorf("PutBlob over the total: %v, want ErrBlobLimit", err)
	}
	if h, err := cs.PutBlob(ctx, "l", bytes.Repeat([]byte("0"), 10), l); err != nil || h != persistence.Hash(bytes.Repeat([]byte("0"), 10)) {
		t.Errorf("PutBlob of kept bytes = %q, %v; want its hash, no error", h, err)
	}
	all, err := cs.Checkpoints(ctx, "l", 0)
	must(t, err)
	if len(all) != 4 || all[0].Unrestorable == "" || all[3].Unrestorable == "" || all[1].Unrestorable != "" {
		t.Errorf("Checkpoints = %+v", all)
	}
	if st, _ := cs.CheckpointStats(ctx, "l"); st.Bytes != 20 {
		t.Errorf("stats %+v, want 20 bytes", st)
	}
}

func testCheckpointDeletedWithSession(t *testing.T, s persistence.Store) {
	ctx := t.Context()
	cs := checkpointStore(t, s)
	for _, id := range []string{"gone", "kept"} {
		must(t, s.CreateSession(ctx, &persistence.Session{ID: id}))
		must(t, s.AppendMessages(ctx, id, userMsg("hi")))
		save(t, cs, fileCheckpoint(id, 1, "a"), []byte("same bytes"), persistence.CheckpointLimits{})
		must(t, cs.CreateUndo(ctx, &persistence.Undo{SessionID: id, FromTurn: 1, State: persistence.UndoPending}))
	}
	must(t, s.DeleteSession(ctx, "gone"))
	if _, err := cs.Checkpoints(ctx, "gone", 0); !errors.Is(err, persistence.ErrNotFound) {
		t.Errorf("Checkpoints of a deleted session: %v", err)
	}
	if _, err := cs.Blob(ctx, "gone", persistence.Hash([]byte("same bytes"))); !errors.Is(err, persistence.ErrNotFound) {
		t.Errorf("Blob of a deleted session: %v", err)
	}
	if st, err := cs.CheckpointStats(ctx, "gone"); err != nil || st != (persistence.CheckpointStats{}) {
		t.Errorf("stats of a deleted session: %+v, %v", st, err)
	}
	if u, err := cs.Undos(ctx, "gone"); err != nil || len(u) != 0 {
		t.Errorf("Undos of a deleted session: %+v, %v", u, err)
	}
	if u, err := cs.UnfinishedUndos(ctx); err != nil || len(u) != 1 || u[0].SessionID != "kept" {
		t.Errorf("UnfinishedUndos = %+v, %v; want the kept session's", u, err)
	}
	if _, err := cs.Blob(ctx, "kept", persistence.Hash([]byte("same bytes"))); err != nil {
		t.Errorf("the other session's blob: %v", err)
	}
}

// turns stores n prompts with a reply each: the prompts' seqs are 1, 3, 5...
func turns(t *testing.T, s persistence.Store, id string, n int) {
	t.Helper()
	must(t, s.CreateSession(t.Context(), &persistence.Session{ID: id}))
	for range n {
		must(t, s.AppendMessages(t.Context(), id, userMsg("do it"), replyMsg("done")))
	}
}

func activeSeqs(t *testing.T, s persistence.Store, id string) []int64 {
	t.Helper()
	var out []int64
	for _, m := range mustMessages(t, s, id, persistence.MessageFilter{ActiveOnly: true}) {
		out = append(out, m.Seq)
	}
	return out
}

func verifyProjection(t *testing.T, s persistence.Store, id string) {
	t.Helper()
	r, err := projection.Verify(t.Context(), s, id)
	if err != nil || !r.OK() {
		t.Errorf("the event log does not rebuild the messages: %v %+v", err, r)
	}
}

func testUndoHidesAndRedoes(t *testing.T, s persistence.Store) {
	ctx := t.Context()
	cs := checkpointStore(t, s)
	turns(t, s, "u", 3)
	files := []persistence.UndoFile{{Path: "a.txt", Action: persistence.UndoRestored, Before: persistence.FileState{Exists: true, Mode: 0o644, Hash: "h"}}}
	u := &persistence.Undo{SessionID: "u", FromTurn: 3, State: persistence.UndoPending, Files: files}
	must(t, cs.CreateUndo(ctx, u))
	if u.ID == 0 || u.CreatedAt.IsZero() {
		t.Fatalf("CreateUndo left %+v", u)
	}
	if err := cs.CreateUndo(ctx, &persistence.Undo{SessionID: "u", FromTurn: 5, State: persistence.UndoPending}); !errors.Is(err, persistence.ErrConflict) {
		t.Errorf("a second undo while one is pending: %v, want ErrConflict", err)
	}
	if un, _ := cs.UnfinishedUndos(ctx); len(un) != 1 || un[0].ID != u.ID || len(un[0].Files) != 1 {
		t.Errorf("UnfinishedUndos = %+v", un)
	}
	if got := activeSeqs(t, s, "u"); !slices.Equal(got, []int64{1, 2, 3, 4, 5, 6}) {
		t.Fatalf("a pending undo changed the context: %v", got)
	}
	u.State = persistence.UndoDone
	must(t, cs.UpdateUndo(ctx, u))
	if got := activeSeqs(t, s, "u"); !slices.Equal(got, []int64{1, 2}) {
		t.Errorf("after the undo of turns 3 on, active seqs %v, want [1 2]", got)
	}
	if len(u.Hidden) != 4 || u.LastSeq != 6 {
		t.Errorf("undo = %+v, want 4 hidden, last seq 6", u)
	}
	all := mustMessages(t, s, "u", persistence.MessageFilter{})
	if len(all) != 6 {
		t.Errorf("the undone messages are not kept: %d", len(all))
	}
	verifyProjection(t, s, "u")
	if un, _ := cs.UnfinishedUndos(ctx); len(un) != 0 {
		t.Errorf("a finished undo is unfinished: %+v", un)
	}
	list, err := cs.Undos(ctx, "u")
	must(t, err)
	if len(list) != 1 || list[0].State != persistence.UndoDone || !slices.Equal(list[0].Hidden, u.Hidden) || list[0].Files[0].Path != "a.txt" {
		t.Errorf("Undos = %+v", list)
	}

	// Redo brings them back; redone, it cannot be redone again.
	u.State = persistence.UndoRedone
	if err := cs.UpdateUndo(ctx, u); !errors.Is(err, persistence.ErrConflict) {
		t.Errorf("done straight to redone: %v, want ErrConflict", err)
	}
	u.State = persistence.UndoRedoing
	must(t, cs.UpdateUndo(ctx, u))
	u.State = persistence.UndoRedone
	must(t, cs.UpdateUndo(ctx, u))
	if got := activeSeqs(t, s, "u"); !slices.Equal(got, []int64{1, 2, 3, 4, 5, 6}) {
		t.Errorf("after redo, active seqs %v", got)
	}
	verifyProjection(t, s, "u")
	u.State = persistence.UndoRedoing
	if err := cs.UpdateUndo(ctx, u); !errors.Is(err, persistence.ErrConflict) {
		t.Errorf("redo of a redone undo: %v, want ErrConflict", err)
	}
}

func testUndoRedoAfterNewMessages(t *testing.T, s persistence.Store) {
	ctx := t.Context()
	cs := checkpointStore(t, s)
	turns(t, s, "n", 2)
	u := &persistence.Undo{SessionID: "n", FromTurn: 3, State: persistence.UndoPending}
	must(t, cs.CreateUndo(ctx, u))
	u.State = persistence.UndoDone
	must(t, cs.UpdateUndo(ctx, u))
	must(t, s.AppendMessages(ctx, "n", userMsg("something else")))
	u.State = persistence.UndoRedoing
	if err := cs.UpdateUndo(ctx, u); !errors.Is(err, persistence.ErrConflict) {
		t.Errorf("redo after a new prompt: %v, want ErrConflict", err)
	}
	if got := activeSeqs(t, s, "n"); !slices.Equal(got, []int64{1, 2, 5}) {
		t.Errorf("active seqs %v, want [1 2 5]", got)
	}
	// An interrupted undo hides nothing.
	v := &persistence.Undo{SessionID: "n", FromTurn: 5, State: persistence.UndoPending}
	must(t, cs.CreateUndo(ctx, v))
	v.State = persistence.UndoInterrupted
	must(t, cs.UpdateUndo(ctx, v))
	if got := activeSeqs(t, s, "n"); !slices.Equal(got, []int64{1, 2, 5}) {
		t.Errorf("an interrupted undo changed the context: %v", got)
	}
}

func testUndoShowsCompacted(t *testing.T, s persistence.Store) {
	ctx := t.Context()
	cs := checkpointStore(t, s)
	turns(t, s, "k", 1)
	must(t, s.AppendMessages(ctx, "k", userMsg("third prompt")))
	msgs := mustMessages(t, s, "k", persistence.MessageFilter{})
	// The turn of seq 3 compacts the first turn, then replies.
	c := &persistence.Compaction{SessionID: "k", Policy: "summary", CompactedIDs: []int64{msgs[0].ID, msgs[1].ID}}
	must(t, s.Compact(ctx, c, []*persistence.Message{{Role: persistence.RoleSummary, Content: "sum", Status: persistence.StatusComplete}}))
	must(t, s.AppendMessages(ctx, "k", replyMsg("reply")))
	if got := activeSeqs(t, s, "k"); !slices.Equal(got, []int64{3, 4, 5}) {
		t.Fatalf("before the undo: %v", got)
	}
	u := &persistence.Undo{SessionID: "k", FromTurn: 3, State: persistence.UndoPending}
	must(t, cs.CreateUndo(ctx, u))
	u.State = persistence.UndoDone
	must(t, cs.UpdateUndo(ctx, u))
	if got := activeSeqs(t, s, "k"); !slices.Equal(got, []int64{1, 2}) {
		t.Errorf("after the undo the context is %v, want the first turn back [1 2]", got)
	}
	verifyProjection(t, s, "k")
	u.State = persistence.UndoRedoing
	must(t, cs.UpdateUndo(ctx, u))
	u.State = persistence.UndoRedone
	must(t, cs.UpdateUndo(ctx, u))
	if got := activeSeqs(t, s, "k"); !slices.Equal(got, []int64{3, 4, 5}) {
		t.Errorf("after redo: %v, want [3 4 5]", got)
	}
	verifyProjection(t, s, "k")
}

func replyMsg(text string) *persistence.Message {
	return &persistence.Message{Role: persistence.RoleAssistant, Content: text, Status: persistence.StatusComplete}
}

// testCheckpointsImported: a dump (with its blobs) imported as another
// session carries the checkpoints, the undo records (their message ids
// renumbered) and the blobs; a fork carries none of them.
func testCheckpointsImported(t *testing.T, s persistence.Store) {
	ctx := t.Context()
	cs := checkpointStore(t, s)
	turns(t, s, "src", 2)
	c := fileCheckpoint("src", 3, "a.txt")
	save(t, cs, c, []byte("before"), persistence.CheckpointLimits{})
	must(t, cs.SetCheckpointAfter(ctx, "src", 3, "a.txt", persistence.FileState{Exists: true, Mode: 0o600, Hash: "x"}))
	save(t, cs, &persistence.Checkpoint{SessionID: "src", Turn: 3, Kind: persistence.CheckpointTree, Before: persistence.FileState{Exists: true, Hash: "tree"}}, nil, persistence.CheckpointLimits{})
	u := &persistence.Undo{SessionID: "src", FromTurn: 3, State: persistence.UndoPending,
		Files: []persistence.UndoFile{{Path: "a.txt", Action: persistence.UndoRestored, Before: c.Before}}}
	must(t, cs.CreateUndo(ctx, u))
	u.State = persistence.UndoDone
	must(t, cs.UpdateUndo(ctx, u))

	d, err := persistence.Dump(ctx, s, "src")
	must(t, err)
	must(t, d.ReadBlobs(ctx, s))
	if len(d.Checkpoints) != 2 || len(d.Undos) != 1 || len(d.Blobs) != 1 {
		t.Fatalf("dump: %d checkpoints, %d undos, %d blobs", len(d.Checkpoints), len(d.Undos), len(d.Blobs))
	}
	want, err := persistence.Digest(d)
	must(t, err)
	must(t, s.DeleteSession(ctx, "src"))
	must(t, s.ImportSession(ctx, d))
	got, err := persistence.Dump(ctx, s, "src")
	must(t, err)
	must(t, got.ReadBlobs(ctx, s))
	if dg, err := persistence.Digest(got); err != nil || dg != want {
		t.Errorf("digest after import %s, %v; want %s", dg, err, want)
	}
	if got.Checkpoints[0].After == nil || got.Checkpoints[0].After.Mode != 0o600 || len(got.Undos[0].Hidden) != 2 {
		t.Errorf("imported: %+v %+v", got.Checkpoints[0], got.Undos[0])
	}
	if got := activeSeqs(t, s, "src"); !slices.Equal(got, []int64{1, 2}) {
		t.Errorf("imported active seqs %v", got)
	}
	b, err := cs.Blob(ctx, "src", c.Before.Hash)
	if err != nil || string(b) != "before" {
		t.Errorf("imported blob %q, %v", b, err)
	}
	// The undo can be redone in the imported session.
	imp := got.Undos[0]
	imp.State = persistence.UndoRedoing
	must(t, cs.UpdateUndo(ctx, &imp))
	imp.State = persistence.UndoRedone
	must(t, cs.UpdateUndo(ctx, &imp))
	if got := activeSeqs(t, s, "src"); len(got) != 4 {
		t.Errorf("after redo of the imported undo: %v", got)
	}
	verifyProjection(t, s, "src")

	if _, err := s.ForkSession(ctx, "src", &persistence.Session{ID: "fork"}); err != nil {
		t.Fatal(err)
	}
	if cps, err := cs.Checkpoints(ctx, "fork", 0); err != nil || len(cps) != 0 {
		t.Errorf("the fork has checkpoints %+v, %v", cps, err)
	}

	// A blob whose bytes do not match its hash is refused.
	bad, err := persistence.Dump(ctx, s, "src")
	must(t, err)
	must(t, bad.ReadBlobs(ctx, s))
	bad.Session.ID = "bad"
	bad.Blobs[0].Data = []byte("tampered")
	if err := s.ImportSession(ctx, bad); err == nil {
		t.Error("a tampered blob was imported")
	}
}
