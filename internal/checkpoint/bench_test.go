package checkpoint_test

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// BenchmarkBeforeChange: one checkpoint of a 64 KiB file, committed to a
// real SQLite file, each in a turn of its own (so each is stored).
func BenchmarkBeforeChange(b *testing.B) {
	e := newEnv(b, "")
	p := e.path("f.txt")
	write(b, p, strings.Repeat("x", 64<<10), 0o644)
	turn := int64(1)
	b.ResetTimer()
	for b.Loop() {
		turn++
		if err := e.rec.BeforeChange(b.Context(), e.sess, turn, p); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkSnapshotWorkTree: a snapshot of a git work tree of 2,000 files
// (8 MiB), the first of each turn.
func BenchmarkSnapshotWorkTree(b *testing.B) {
	if _, err := exec.LookPath("git"); err != nil {
		b.Skip("git is not installed")
	}
	dir := b.TempDir()
	for i := range 2000 {
		write(b, filepath.Join(dir, fmt.Sprintf("d%02d", i%50), fmt.Sprintf("f%d.txt", i)), strings.Repeat(fmt.Sprintf("line %d\n", i), 512), 0o644)
	}
	must(b, os.Mkdir(filepath.Join(dir, ".git"), 0o755))
	e := newEnv(b, dir)
	turn := int64(1)
	b.ResetTimer()
	for b.Loop() {
		turn++
		if err := e.rec.SnapshotWorkTree(b.Context(), e.sess, turn); err != nil {
			b.Fatal(err)
		}
	}
	cps, err := e.store.Checkpoints(b.Context(), e.sess.ID, 0)
	must(b, err)
	if len(cps) == 0 || cps[0].Unrestorable != "" {
		b.Fatalf("no snapshot: %+v", cps)
	}
}
