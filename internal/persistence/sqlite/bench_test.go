package sqlite

import (
	"path/filepath"
	"testing"

	"github.com/crow-acp/crow-acp/internal/persistence"
	"github.com/crow-acp/crow-acp/internal/persistence/persistencetest"
)

// BenchmarkStore runs the shared store benchmarks (the same as
// PostgreSQL's) on a SQLite file.
func BenchmarkStore(b *testing.B) {
	persistencetest.Bench(b, func(b *testing.B) persistence.Store {
		return mustOpen(b, filepath.Join(b.TempDir(), "bench.db"))
	})
}
