package persistencetest

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/crow-acp/crow-acp/internal/persistence"
)

var leaseTests = []storeTest{
	{"LeaseOneWriter", testLeaseOneWriter},
	{"LeaseRenewRelease", testLeaseRenewRelease},
	{"LeaseGeneration", testLeaseGeneration},
	{"LeaseFencedWrites", testLeaseFencedWrites},
}

func lease(session, owner string, pid int) *persistence.Lease {
	return &persistence.Lease{SessionID: session, Owner: owner, PID: pid, Host: "host-" + owner}
}

func testLeaseOneWriter(t *testing.T, s persistence.Store) {
	ctx := t.Context()
	checkErr(t, "lease on unknown session", s.AcquireLease(ctx, lease("none", "a", 1), time.Minute, ""), persistence.ErrNotFound)
	checkErr(t, "GetLease(none)", errOf(s.GetLease(ctx, "none")), persistence.ErrNotFound)
	mustCreate(t, s, &persistence.Session{ID: "s"})
	la := lease("s", "a", 11)
	must(t, s.AcquireLease(ctx, la, time.Minute, ""))
	if la.AcquiredAt.IsZero() || !la.ExpiresAt.After(la.HeartbeatAt) {
		t.Errorf("times not filled: %+v", la)
	}
	err := s.AcquireLease(ctx, lease("s", "b", 22), time.Minute, "")
	var held *persistence.LeaseHeldError
	if !errors.As(err, &held) || !errors.Is(err, persistence.ErrLeaseHeld) {
		t.Fatalf("second writer: %v, want a LeaseHeldError", err)
	}
	if held.Holder.Owner != "a" || held.Holder.PID != 11 || held.Holder.Host != "host-a" {
		t.Errorf("holder %+v, want a/11/host-a", held.Holder)
	}
	// A wrong "replace" does not take a live lease.
	checkErr(t, "replace of another owner", s.AcquireLease(ctx, lease("s", "b", 22), time.Minute, "zzz"), persistence.ErrLeaseHeld)
	// Renewal by the holder keeps the acquisition time.
	again := lease("s", "a", 11)
	must(t, s.AcquireLease(ctx, again, time.Minute, ""))
	if !again.AcquiredAt.Equal(la.AcquiredAt) || again.HeartbeatAt.Before(la.HeartbeatAt) {
		t.Errorf("renewal: %+v after %+v", again, la)
	}
	got, err := s.GetLease(ctx, "s")
	if err != nil || got.Owner != "a" {
		t.Errorf("GetLease = %+v, %v", got, err)
	}
}

func testLeaseRenewRelease(t *testing.T, s persistence.Store) {
	ctx := t.Context()
	for _, id := range []string{"s1", "s2", "s3"} {
		mustCreate(t, s, &persistence.Session{ID: id})
	}
	for _, l := range []*persistence.Lease{lease("s1", "a", 1), lease("s2", "a", 1), lease("s3", "b", 2)} {
		ttl := time.Minute
		if l.Owner == "b" {
			ttl = 30 * time.Millisecond
		}
		must(t, s.AcquireLease(ctx, l, ttl, ""))
	}
	ids, err := s.RenewLeases(ctx, "a", time.Hour)
	slices.Sort(ids)
	if err != nil || !slices.Equal(ids, []string{"s1", "s2"}) {
		t.Fatalf("RenewLeases(a) = %v, %v", ids, err)
	}
	if l, err := s.GetLease(ctx, "s1"); err != nil || time.Until(l.ExpiresAt) < 30*time.Minute {
		t.Fatalf("renewed lease %+v, %v; want it to expire in an hour", l, err)
	}
	time.Sleep(50 * time.Millisecond)
	// s1 was renewed: still a's. s3 was not: b's expired lease is free.
	checkErr(t, "renewed lease taken", s.AcquireLease(ctx, lease("s1", "x", 9), time.Minute, ""), persistence.ErrLeaseHeld)
	if err := s.AcquireLease(ctx, lease("s3", "x", 9), time.Minute, ""); err != nil {
		t.Errorf("expired lease not free: %v", err)
	}
	// Release by a non-owner is a no-op; by the owner it frees the session.
	must(t, s.ReleaseLease(ctx, "s1", "x"))
	if got, _ := s.GetLease(ctx, "s1"); got == nil || got.Owner != "a" {
		t.Errorf("non-owner release dropped the lease: %+v", got)
	}
	must(t, s.ReleaseLease(ctx, "s1", "a"))
	if got, err := s.GetLease(ctx, "s1"); err != nil || got.ExpiresAt.After(time.Now()) || got.Owner != "" {
		t.Errorf("after release: %+v, %v; want it recorded, expired, with no owner", got, err)
	}
	if ids, err := s.RenewLeases(ctx, "a", time.Hour); err != nil || !slices.Equal(ids, []string{"s2"}) {
		t.Errorf("RenewLeases(a) after releasing s1 = %v, %v; want [s2]", ids, err)
	}
	if err := s.AcquireLease(ctx, lease("s1", "x", 9), time.Minute, ""); err != nil {
		t.Errorf("released lease not free: %v", err)
	}
	must(t, s.DeleteSession(ctx, "s1"))
	checkErr(t, "deleted session keeps its lease", errOf(s.GetLease(ctx, "s1")), persistence.ErrNotFound)
}

// testLeaseGeneration: every acquisition, by anyone, takes the next
// generation, across release, expiry and takeover.
func testLeaseGeneration(t *testing.T, s persistence.Store) {
	ctx := t.Context()
	mustCreate(t, s, &persistence.Session{ID: "s"})
	var (
		gens      []int64
		abandoned []bool
	)
	take := func(owner string, ttl time.Duration, replace string) {
		t.Helper()
		l := lease("s", owner, 1)
		if err := s.AcquireLease(ctx, l, ttl, replace); err != nil {
			t.Fatalf("%s: %v", owner, err)
		}
		gens = append(gens, l.Generation)
		abandoned = append(abandoned, l.Abandoned)
	}
	take("a", time.Minute, "")
	take("a", time.Minute, "") // again by its holder
	must(t, s.ReleaseLease(ctx, "s", "a"))
	take("b", 10*time.Millisecond, "") // after a release
	time.Sleep(30 * time.Millisecond)
	take("c", time.Minute, "")  // after expiry
	take("d", time.Minute, "c") // replacing a dead holder
	if want := []int64{1, 2, 3, 4, 5}; !slices.Equal(gens, want) {
		t.Errorf("generations %v, want %v", gens, want)
	}
	// Only a lease that was released is not abandoned.
	if want := []bool{false, true, false, true, true}; !slices.Equal(abandoned, want) {
		t.Errorf("abandoned %v, want %v", abandoned, want)
	}
	// A former holder's release leaves the new holder's lease alone.
	must(t, s.ReleaseLease(ctx, "s", "c"))
	if got, err := s.GetLease(ctx, "s"); err != nil || got.Generation != 5 || got.Owner != "d" {
		t.Errorf("GetLease = %+v, %v; want d's generation 5", got, err)
	}
	// An expired lease is not released by its holder: the next one
	// finds it abandoned.
	take("e", 10*time.Millisecond, "d")
	time.Sleep(30 * time.Millisecond)
	must(t, s.ReleaseLease(ctx, "s", "e"))
	take("f", time.Minute, "")
	if !abandoned[len(abandoned)-1] {
		t.Error("a lease released only after it expired counts as released")
	}
}

// testLeaseFencedWrites: a write carrying its lease's fence succeeds while
// that lease is live and is refused with ErrLeaseLost, changing nothing,
// once it expired, was released, or was taken by anyone (its holder
// included: each acquisition fences off the writes of the one before).
func testLeaseFencedWrites(t *testing.T, s persistence.Store) {
	ctx := t.Context()
	mustCreate(t, s, &persistence.Session{ID: "s"})
	acquire := func(owner string, ttl time.Duration) persistence.Store {
		t.Helper()
		l := lease("s", owner, 1)
		must(t, s.AcquireLease(ctx, l, ttl, ""))
		return s.WithFence(l.Fence())
	}
	// Every kind of write a turn makes. prepare does the unfenced setup and
	// returns the fenced write.
	writes := []struct {
		name    string
		prepare func() func(w persistence.Store) error
	}{
		{"AppendMessages", func() func(persistence.Store) error {
			return func(w persistence.Store) error { return w.AppendMessages(ctx, "s", userMsg("x")) }
		}},
		{"UpdateMessage", func() func(persistence.Store) error {
			m := &persistence.Message{Role: persistence.RoleAssistant, Content: "partial", Status: persistence.StatusStreaming}
			mustAppend(t, s, "s", m)
			return func(w persistence.Store) error {
				up := *m
				up.Content, up.Status = "whole", persistence.StatusComplete
				return w.UpdateMessage(ctx, &up)
			}
		}},
		{"UpdateSession", func() func(persistence.Store) error {
			return func(w persistence.Store) error {
				sess := mustGet(t, s, "s")
				sess.Title += "+"
				return w.UpdateSession(ctx, sess)
			}
		}},
		{"InterruptStreaming", func() func(persistence.Store) error {
			mustAppend(t, s, "s", &persistence.Message{Role: persistence.RoleAssistant, Content: "cut", Status: persistence.StatusStreaming})
			return func(w persistence.Store) error {
				_, err := w.InterruptStreaming(ctx, "s")
				return err
			}
		}},
		{"Compact", func() func(persistence.Store) error {
			m := userMsg("old")
			mustAppend(t, s, "s", m)
			return func(w persistence.Store) error {
				c := &persistence.Compaction{SessionID: "s", Policy: "test", CompactedIDs: []int64{m.ID}}
				return w.Compact(ctx, c, []*persistence.Message{{Role: persistence.RoleSummary, Content: "sum", Status: persistence.StatusComplete}})
			}
		}},
	}
	snapshot := func() string {
		t.Helper()
		var b strings.Builder
		for _, m := range mustMessages(t, s, "s", persistence.MessageFilter{}) {
			fmt.Fprintf(&b, "%d %s %q %s %v|", m.Seq, m.Role, m.Content, m.Status, m.IsActive)
		}
		comps, err := s.Compactions(ctx, "s")
		if err != nil {
			t.Fatal(err)
		}
		sess := mustGet(t, s, "s")
		fmt.Fprintf(&b, "%d compactions, title %q, updated %s", len(comps), sess.Title, sess.UpdatedAt)
		return b.String()
	}
	refused := func(fenced persistence.Store, when string) {
		t.Helper()
		for _, w := range writes {
			write := w.prepare()
			before := snapshot()
			if err := write(fenced); !errors.Is(err, persistence.ErrLeaseLost) {
				t.Errorf("%s: %s = %v, want ErrLeaseLost", when, w.name, err)
			}
			if after := snapshot(); after != before {
				t.Errorf("%s: the refused %s changed the session:\n%s\n%s", when, w.name, before, after)
			}
		}
	}

	held := acquire("a", time.Minute)
	for _, w := range writes {
		write := w.prepare()
		before := snapshot()
		if err := write(held); err != nil {
			t.Fatalf("%s under a live lease: %v", w.name, err)
		}
		if snapshot() == before {
			t.Errorf("%s under a live lease changed nothing", w.name)
		}
	}

	again := acquire("a", time.Minute)
	refused(held, "after its holder acquired it again")
	must(t, s.ReleaseLease(ctx, "s", "a"))
	refused(again, "after release")

	short := acquire("b", 20*time.Millisecond)
	time.Sleep(40 * time.Millisecond)
	refused(short, "after expiry, nobody else holding it")
	if ids, err := s.RenewLeases(ctx, "b", time.Minute); err != nil || len(ids) != 0 {
		t.Errorf("RenewLeases of an expired lease = %v, %v; want none renewed", ids, err)
	}
	refused(short, "after a late heartbeat")

	mine := acquire("c", time.Minute)
	refused(again, "after another owner took it")
	if err := mine.AppendMessages(ctx, "s", userMsg("c's")); err != nil {
		t.Errorf("the new holder cannot write: %v", err)
	}
	// Unfenced writes (no turn) are not affected.
	if err := s.AppendMessages(ctx, "s", userMsg("unfenced")); err != nil {
		t.Errorf("unfenced write: %v", err)
	}
}
