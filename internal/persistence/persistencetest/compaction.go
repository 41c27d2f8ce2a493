package persistencetest

import (
	"errors"
	"reflect"
	"slices"
	"testing"

	"github.com/crow-acp/crow-acp/internal/persistence"
)

// compactionTests are the CompactionStore part of the contract.
var compactionTests = []storeTest{
	{"CompactAdded", testCompactAdded},
	{"ExpandCollapse", testExpandCollapse},
	{"ExpandNested", testExpandNested},
	{"DeleteCompaction", testDeleteCompaction},
	{"CompactionNotFound", testCompactionNotFound},
	{"TokenCounts", testTokenCounts},
}

func activeIDs(t *testing.T, s persistence.Store, sessionID string) []int64 {
	t.Helper()
	var out []int64
	for _, m := range mustMessages(t, s, sessionID, persistence.MessageFilter{ActiveOnly: true}) {
		out = append(out, m.ID)
	}
	return out
}

// fiveMessages makes session "c" with five user messages.
func fiveMessages(t *testing.T, s persistence.Store) []*persistence.Message {
	mustCreate(t, s, &persistence.Session{ID: "c"})
	msgs := []*persistence.Message{userMsg("m1"), userMsg("m2"), userMsg("m3"), userMsg("m4"), userMsg("m5")}
	mustAppend(t, s, "c", msgs...)
	return msgs
}

func mustCompact(t *testing.T, s persistence.Store, c *persistence.Compaction, added ...*persistence.Message) {
	t.Helper()
	if err := s.Compact(t.Context(), c, added); err != nil {
		t.Fatalf("Compact: %v", err)
	}
}

func testCompactAdded(t *testing.T, s persistence.Store) {
	msgs := fiveMessages(t, s)
	sum := &persistence.Message{Role: persistence.RoleSummary, Content: "summary", TokenCount: 7, TokenEncoding: "o200k_base"}
	marker := &persistence.Message{Role: persistence.RoleTool, ToolCallID: "call_1", Content: "[pruned]"}
	c := &persistence.Compaction{SessionID: "c", Policy: "summarize", CompactedIDs: []int64{msgs[0].ID, msgs[1].ID},
		KeptIDs: []int64{msgs[2].ID}, TokensBefore: 100, TokensAfter: 40, MessagesBefore: 5, MessagesAfter: 4}
	mustCompact(t, s, c, marker, sum)
	if c.ID == 0 || sum.ID == 0 || marker.ID == 0 || sum.Seq != 7 || marker.Seq != 6 {
		t.Fatalf("ids not filled: compaction %d, marker %d seq %d, summary %d seq %d", c.ID, marker.ID, marker.Seq, sum.ID, sum.Seq)
	}
	if c.SummaryMessageID == nil || *c.SummaryMessageID != sum.ID {
		t.Errorf("SummaryMessageID = %v, want the summary %d", c.SummaryMessageID, sum.ID)
	}
	if !slices.Equal(c.AddedIDs, []int64{marker.ID, sum.ID}) {
		t.Errorf("AddedIDs = %v, want [%d %d]", c.AddedIDs, marker.ID, sum.ID)
	}
	want := []int64{msgs[2].ID, msgs[3].ID, msgs[4].ID, marker.ID, sum.ID}
	if got := activeIDs(t, s, "c"); !slices.Equal(got, want) {
		t.Errorf("active = %v, want %v", got, want)
	}
	got, err := s.Compaction(t.Context(), "c", c.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got.MessagesBefore != 5 || got.MessagesAfter != 4 || got.Expanded || !slices.Equal(got.AddedIDs, c.AddedIDs) ||
		got.TokensBefore != 100 || got.TokensAfter != 40 || got.Policy != "summarize" {
		t.Errorf("Compaction = %+v", got)
	}
	all := mustMessages(t, s, "c", persistence.MessageFilter{})
	if all[6].TokenCount != 7 || all[6].TokenEncoding != "o200k_base" {
		t.Errorf("summary token count = %d %q, want 7 o200k_base", all[6].TokenCount, all[6].TokenEncoding)
	}
	list, err := s.Compactions(t.Context(), "c")
	if err != nil || len(list) != 1 || !slices.Equal(list[0].AddedIDs, c.AddedIDs) || list[0].MessagesAfter != 4 {
		t.Errorf("Compactions = %+v, %v", list, err)
	}
}

func testExpandCollapse(t *testing.T, s persistence.Store) {
	ctx := t.Context()
	msgs := fiveMessages(t, s)
	sum := &persistence.Message{Role: persistence.RoleSummary, Content: "summary"}
	c := &persistence.Compaction{SessionID: "c", Policy: "summarize", CompactedIDs: []int64{msgs[0].ID, msgs[1].ID, msgs[2].ID}}
	mustCompact(t, s, c, sum)
	before := mustMessages(t, s, "c", persistence.MessageFilter{ActiveOnly: true})

	if err := s.ExpandCompaction(ctx, "c", c.ID); err != nil {
		t.Fatalf("Expand: %v", err)
	}
	want := []int64{msgs[0].ID, msgs[1].ID, msgs[2].ID, msgs[3].ID, msgs[4].ID}
	if got := activeIDs(t, s, "c"); !slices.Equal(got, want) {
		t.Errorf("expanded active = %v, want %v", got, want)
	}
	if got, _ := s.Compaction(ctx, "c", c.ID); got == nil || !got.Expanded {
		t.Errorf("record not marked expanded: %+v", got)
	}
	checkErr(t, "second Expand", s.ExpandCompaction(ctx, "c", c.ID), persistence.ErrConflict)

	if err := s.CollapseCompaction(ctx, "c", c.ID); err != nil {
		t.Fatalf("Collapse: %v", err)
	}
	after := mustMessages(t, s, "c", persistence.MessageFilter{ActiveOnly: true})
	if !reflect.DeepEqual(before, after) {
		t.Errorf("expand+collapse changed the active view:\nbefore %+v\nafter  %+v", before, after)
	}
	checkErr(t, "second Collapse", s.CollapseCompaction(ctx, "c", c.ID), persistence.ErrConflict)
}

func testExpandNested(t *testing.T, s persistence.Store) {
	ctx := t.Context()
	msgs := fiveMessages(t, s)
	s1 := &persistence.Message{Role: persistence.RoleSummary, Content: "s1"}
	c1 := &persistence.Compaction{SessionID: "c", Policy: "summarize", CompactedIDs: []int64{msgs[0].ID, msgs[1].ID}}
	mustCompact(t, s, c1, s1)
	s2 := &persistence.Message{Role: persistence.RoleSummary, Content: "s2"}
	c2 := &persistence.Compaction{SessionID: "c", Policy: "summarize", CompactedIDs: []int64{s1.ID, msgs[2].ID}}
	mustCompact(t, s, c2, s2)

	checkErr(t, "Expand of a covered compaction", s.ExpandCompaction(ctx, "c", c1.ID), persistence.ErrConflict)
	must(t, s.ExpandCompaction(ctx, "c", c2.ID))
	if err := s.ExpandCompaction(ctx, "c", c1.ID); err != nil {
		t.Fatalf("Expand c1 after c2: %v", err)
	}
	want := []int64{msgs[0].ID, msgs[1].ID, msgs[2].ID, msgs[3].ID, msgs[4].ID}
	if got := activeIDs(t, s, "c"); !slices.Equal(got, want) {
		t.Errorf("active = %v, want %v", got, want)
	}
	// c2's originals include s1, now hidden by c1's expansion: c2 cannot
	// collapse until c1 does.
	checkErr(t, "Collapse c2 while c1 expanded", s.CollapseCompaction(ctx, "c", c2.ID), persistence.ErrConflict)
	must(t, s.CollapseCompaction(ctx, "c", c1.ID))
	must(t, s.CollapseCompaction(ctx, "c", c2.ID))
	if got := activeIDs(t, s, "c"); !slices.Equal(got, []int64{msgs[3].ID, msgs[4].ID, s2.ID}) {
		t.Errorf("active after collapsing both = %v", got)
	}
}

func testDeleteCompaction(t *testing.T, s persistence.Store) {
	ctx := t.Context()
	msgs := fiveMessages(t, s)
	sum := &persistence.Message{Role: persistence.RoleSummary, Content: "summary"}
	c := &persistence.Compaction{SessionID: "c", Policy: "summarize", CompactedIDs: []int64{msgs[0].ID, msgs[1].ID}}
	mustCompact(t, s, c, sum)
	if err := s.DeleteCompaction(ctx, "c", c.ID); err != nil {
		t.Fatalf("Delete: %v", err)
	}
	if got := activeIDs(t, s, "c"); len(got) != 5 {
		t.Errorf("active after delete = %v, want the five originals", got)
	}
	if all := mustMessages(t, s, "c", persistence.MessageFilter{}); len(all) != 5 {
		t.Errorf("%d messages after delete, want 5 (the summary is gone)", len(all))
	}
	checkErr(t, "Compaction after delete", errOf(s.Compaction(ctx, "c", c.ID)), persistence.ErrNotFound)
	checkNextSeq(t, s, "c", 7, "seq after delete (seqs are never reused)")
}

func testCompactionNotFound(t *testing.T, s persistence.Store) {
	ctx := t.Context()
	msgs := fiveMessages(t, s)
	mustCreate(t, s, &persistence.Session{ID: "other"})
	c := &persistence.Compaction{SessionID: "c", Policy: "drop", CompactedIDs: []int64{msgs[0].ID}}
	mustCompact(t, s, c)
	for name, err := range map[string]error{
		"Compaction":       func() error { _, err := s.Compaction(ctx, "other", c.ID); return err }(),
		"Expand other":     s.ExpandCompaction(ctx, "other", c.ID),
		"Expand unknown":   s.ExpandCompaction(ctx, "c", c.ID+100),
		"Collapse unknown": s.CollapseCompaction(ctx, "c", c.ID+100),
		"Delete unknown":   s.DeleteCompaction(ctx, "c", c.ID+100),
	} {
		if !errors.Is(err, persistence.ErrNotFound) {
			t.Errorf("%s = %v, want ErrNotFound", name, err)
		}
	}
	if got := activeIDs(t, s, "c"); len(got) != 4 {
		t.Errorf("failed calls changed the view: %v", got)
	}
}

func testTokenCounts(t *testing.T, s persistence.Store) {
	ctx := t.Context()
	msgs := fiveMessages(t, s)
	must(t, s.SetTokenCounts(ctx, "c", "cl100k_base", map[int64]int{msgs[0].ID: 11, msgs[2].ID: 33, 999999: 1}))
	all := mustMessages(t, s, "c", persistence.MessageFilter{})
	if all[0].TokenCount != 11 || all[0].TokenEncoding != "cl100k_base" || all[2].TokenCount != 33 ||
		all[1].TokenCount != 0 || all[1].TokenEncoding != "" {
		t.Errorf("counts = %d/%q %d/%q %d", all[0].TokenCount, all[0].TokenEncoding, all[1].TokenCount, all[1].TokenEncoding, all[2].TokenCount)
	}
	checkErr(t, "SetTokenCounts(unknown session)", s.SetTokenCounts(ctx, "nope", "x", map[int64]int{1: 1}), persistence.ErrNotFound)
}
