// Package pgtest gives tests a private, empty PostgreSQL schema on the
// server named by $CROW_TEST_POSTGRES_URL, and skips them, saying why, when
// there is none.
//
// Each call creates a schema with a random name and returns the URL with
// search_path set to it, so tests run in parallel and repeatedly against one
// database without seeing each other. The schema is dropped when the test
// ends.
package pgtest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"net/url"
	"os"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// EnvVar names the PostgreSQL server for tests, e.g.
// postgres://postgres@127.0.0.1:55432/postgres?sslmode=disable.
const EnvVar = "CROW_TEST_POSTGRES_URL"

// SkipNotice is the reason given when $CROW_TEST_POSTGRES_URL is unset.
const SkipNotice = EnvVar + " is not set: skipping PostgreSQL tests (see README, \"PostgreSQL\")"

// ServerURL returns $CROW_TEST_POSTGRES_URL, or skips tb when it is unset.
func ServerURL(tb testing.TB) string {
	tb.Helper()
	u := os.Getenv(EnvVar)
	if u == "" {
		tb.Skip(SkipNotice)
	}
	return u
}

// URL creates a fresh schema on the test server and returns a URL whose
// connections use it. It skips tb when no server is configured and fails it
// when the server cannot be reached.
func URL(tb testing.TB) string {
	tb.Helper()
	server := ServerURL(tb)
	var b [8]byte
	rand.Read(b[:])
	schema := "crow_test_" + hex.EncodeToString(b[:])

	if err := exec(server, `CREATE SCHEMA `+schema); err != nil {
		tb.Fatalf("pgtest: create schema on $%s: %v", EnvVar, err)
	}
	tb.Cleanup(func() {
		if err := exec(server, `DROP SCHEMA `+schema+` CASCADE`); err != nil {
			tb.Errorf("pgtest: drop schema %s: %v", schema, err)
		}
	})

	u, err := url.Parse(server)
	if err != nil {
		tb.Fatalf("pgtest: $%s: %v", EnvVar, err)
	}
	q := u.Query()
	q.Set("search_path", schema)
	u.RawQuery = q.Encode()
	return u.String()
}

// exec runs sql on its own connection to server.
func exec(server, sql string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, server)
	if err != nil {
		return err
	}
	defer conn.Close(ctx)
	_, err = conn.Exec(ctx, sql)
	return err
}
