package postgres

import (
	"testing"

	"github.com/crow-acp/crow-acp/internal/persistence"
	"github.com/crow-acp/crow-acp/internal/persistence/persistencetest"
	"github.com/crow-acp/crow-acp/internal/persistence/postgres/pgtest"
)

// BenchmarkStore runs the shared store benchmarks (the same as SQLite's) on
// the server named by $CROW_TEST_POSTGRES_URL.
func BenchmarkStore(b *testing.B) {
	pgtest.ServerURL(b)
	persistencetest.Bench(b, func(b *testing.B) persistence.Store { return mustOpen(b, pgtest.URL(b)) })
}
