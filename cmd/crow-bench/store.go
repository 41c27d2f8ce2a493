package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"

	"github.com/jackc/pgx/v5"

	"github.com/crow-acp/crow-acp/acp"
	"github.com/crow-acp/crow-acp/internal/persistence/backend"
)

// keepDir is the -keep flag: the temporary directory (the databases) and
// PostgreSQL schemas are kept.
var keepDir *bool

// benchDB returns the CROW_DB the measured processes use: a fresh SQLite
// file in dir when dsn is empty, or, for a postgres:// URL, a fresh schema on
// that server (dropped by cleanup, unless -keep) so that a shared server
// keeps no trace.
func benchDB(dsn, dir string) (db, kind string, cleanup func(), err error) {
	if dsn == "" {
		return filepath.Join(dir, "bench.db"), "sqlite", func() {}, nil
	}
	k, err := backend.Parse(dsn)
	if err != nil {
		return "", "", nil, err
	}
	if k != backend.Postgres {
		return dsn, string(k), func() {}, nil
	}
	var b [6]byte
	rand.Read(b[:])
	schema := "crow_bench_" + hex.EncodeToString(b[:])
	ctx := context.Background()
	exec := func(sql string) error {
		conn, err := pgx.Connect(ctx, dsn)
		if err != nil {
			return err
		}
		defer conn.Close(ctx)
		_, err = conn.Exec(ctx, sql)
		return err
	}
	if err := exec(`CREATE SCHEMA ` + schema); err != nil {
		return "", "", nil, fmt.Errorf("create schema on %s: %w", backend.Describe(dsn), err)
	}
	u, err := url.Parse(dsn)
	if err != nil {
		return "", "", nil, err
	}
	q := u.Query()
	q.Set("search_path", schema)
	u.RawQuery = q.Encode()
	if *keepDir {
		fmt.Fprintln(os.Stderr, "keeping schema", schema)
		return u.String(), "postgres", func() {}, nil
	}
	return u.String(), "postgres", func() { _ = exec(`DROP SCHEMA ` + schema + ` CASCADE`) }, nil
}

// agentProc is a running crow-acp spoken to over its stdio. The bench
// renders nothing, so session updates are left undecoded.
type agentProc struct {
	cmd   *exec.Cmd
	stdin io.WriteCloser
	conn  *acp.ClientConn
}

func startAgent(cmd *exec.Cmd) (*agentProc, error) {
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	return &agentProc{cmd: cmd, stdin: stdin, conn: acp.NewClientConn(stdout, stdin, nil, acp.Options{})}, nil
}

func (p *agentProc) initialize(ctx context.Context) error {
	if _, err := p.conn.Initialize(ctx, &acp.InitializeRequest{ProtocolVersion: acp.ProtocolVersion}); err != nil {
		return fmt.Errorf("initialize: %w", err)
	}
	return nil
}

func (p *agentProc) prompt(ctx context.Context, sid, text string) (*acp.PromptResponse, error) {
	res, err := p.conn.Prompt(ctx, &acp.PromptRequest{SessionID: sid, Prompt: []acp.ContentBlock{acp.TextBlock(text)}})
	if err != nil {
		return nil, fmt.Errorf("session/prompt: %w", err)
	}
	return res, nil
}

func (p *agentProc) close() {
	_ = p.stdin.Close()
	_ = p.cmd.Wait()
	_ = p.conn.Close()
}
