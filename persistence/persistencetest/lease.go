package persistencetest

import (
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/crow-acp/crow-acp/persistence"
)

var leaseTests = []struct {
	name string
	fn   func(t *testing.T, s persistence.Store)
}{
	{"LeaseOneWriter", testLeaseOneWriter},
	{"LeaseExpiryAndReplace", testLeaseExpiryAndReplace},
	{"LeaseRenewRelease", testLeaseRenewRelease},
}

func lease(session, owner string, pid int) *persistence.Lease {
	return &persistence.Lease{SessionID: session, Owner: owner, PID: pid, Host: "host-" + owner}
}

func testLeaseOneWriter(t *testing.T, s persistence.Store) {
	ctx := t.Context()
	if err := s.AcquireLease(ctx, lease("none", "a", 1), time.Minute, ""); !errors.Is(err, persistence.ErrNotFound) {
		t.Errorf("lease on unknown session: %v, want ErrNotFound", err)
	}
	if _, err := s.GetLease(ctx, "none"); !errors.Is(err, persistence.ErrNotFound) {
		t.Errorf("GetLease(none) = %v, want ErrNotFound", err)
	}
	mustCreate(t, s, &persistence.Session{ID: "s"})
	la := lease("s", "a", 11)
	if err := s.AcquireLease(ctx, la, time.Minute, ""); err != nil {
		t.Fatal(err)
	}
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
	if err := s.AcquireLease(ctx, lease("s", "b", 22), time.Minute, "zzz"); !errors.Is(err, persistence.ErrLeaseHeld) {
		t.Errorf("replace of another owner: %v, want ErrLeaseHeld", err)
	}
	// Renewal by the holder keeps the acquisition time.
	again := lease("s", "a", 11)
	if err := s.AcquireLease(ctx, again, time.Minute, ""); err != nil {
		t.Fatal(err)
	}
	if !again.AcquiredAt.Equal(la.AcquiredAt) || again.HeartbeatAt.Before(la.HeartbeatAt) {
		t.Errorf("renewal: %+v after %+v", again, la)
	}
	got, err := s.GetLease(ctx, "s")
	if err != nil || got.Owner != "a" {
		t.Errorf("GetLease = %+v, %v", got, err)
	}
}

func testLeaseExpiryAndReplace(t *testing.T, s persistence.Store) {
	ctx := t.Context()
	mustCreate(t, s, &persistence.Session{ID: "s"})
	if err := s.AcquireLease(ctx, lease("s", "dead", 1), 20*time.Millisecond, ""); err != nil {
		t.Fatal(err)
	}
	time.Sleep(40 * time.Millisecond)
	nb := lease("s", "b", 2)
	if err := s.AcquireLease(ctx, nb, time.Minute, ""); err != nil {
		t.Fatalf("expired lease not taken over: %v", err)
	}
	if nb.Owner != "b" {
		t.Errorf("owner %q", nb.Owner)
	}
	// b is reported dead by the caller: c replaces it before expiry.
	if err := s.AcquireLease(ctx, lease("s", "c", 3), time.Minute, "b"); err != nil {
		t.Fatalf("replace of a dead owner: %v", err)
	}
	if got, _ := s.GetLease(ctx, "s"); got == nil || got.Owner != "c" || got.PID != 3 {
		t.Errorf("lease after replace: %+v", got)
	}
}

func testLeaseRenewRelease(t *testing.T, s persistence.Store) {
	ctx := t.Context()
	for _, id := range []string{"s1", "s2", "s3"} {
		mustCreate(t, s, &persistence.Session{ID: id})
	}
	for _, l := range []*persistence.Lease{lease("s1", "a", 1), lease("s2", "a", 1), lease("s3", "b", 2)} {
		if err := s.AcquireLease(ctx, l, 50*time.Millisecond, ""); err != nil {
			t.Fatal(err)
		}
	}
	ids, err := s.RenewLeases(ctx, "a", time.Hour)
	slices.Sort(ids)
	if err != nil || !slices.Equal(ids, []string{"s1", "s2"}) {
		t.Fatalf("RenewLeases(a) = %v, %v", ids, err)
	}
	time.Sleep(80 * time.Millisecond)
	// s1 was renewed: still a's. s3 was not: b's expired lease is free.
	if err := s.AcquireLease(ctx, lease("s1", "x", 9), time.Minute, ""); !errors.Is(err, persistence.ErrLeaseHeld) {
		t.Errorf("renewed lease taken: %v", err)
	}
	if err := s.AcquireLease(ctx, lease("s3", "x", 9), time.Minute, ""); err != nil {
		t.Errorf("expired lease not free: %v", err)
	}
	// Release by a non-owner is a no-op; by the owner it frees the session.
	if err := s.ReleaseLease(ctx, "s1", "x"); err != nil {
		t.Fatal(err)
	}
	if got, _ := s.GetLease(ctx, "s1"); got == nil || got.Owner != "a" {
		t.Errorf("non-owner release dropped the lease: %+v", got)
	}
	if err := s.ReleaseLease(ctx, "s1", "a"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.GetLease(ctx, "s1"); !errors.Is(err, persistence.ErrNotFound) {
		t.Errorf("after release: %v, want ErrNotFound", err)
	}
	if err := s.AcquireLease(ctx, lease("s1", "x", 9), time.Minute, ""); err != nil {
		t.Errorf("released lease not free: %v", err)
	}
	if err := s.DeleteSession(ctx, "s1"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.GetLease(ctx, "s1"); !errors.Is(err, persistence.ErrNotFound) {
		t.Errorf("deleted session keeps its lease: %v", err)
	}
}
