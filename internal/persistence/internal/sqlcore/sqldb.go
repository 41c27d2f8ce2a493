package sqlcore

import (
	"context"
	"database/sql"
)

// SQLTx adapts a database/sql transaction to Conn, SQLDB a pool. Each is
// one pointer, so making a Conn of it allocates nothing. Their methods only
// pass the call on, converting names and results: Conn is the one shape
// sqlcore reads for both drivers (pgx's is pgConn in package postgres).
type (
	SQLTx struct{ Tx *sql.Tx }
	SQLDB struct{ DB *sql.DB }
)

func (c SQLTx) Exec(ctx context.Context, query string, args ...any) (int64, error) {
	return affected(c.Tx.ExecContext(ctx, query, args...))
}

func (c SQLTx) Query(ctx context.Context, query string, args ...any) (Rows, error) {
	return rowsOf(c.Tx.QueryContext(ctx, query, args...))
}

func (c SQLTx) QueryRow(ctx context.Context, query string, args ...any) Row {
	return c.Tx.QueryRowContext(ctx, query, args...)
}

func (c SQLDB) Exec(ctx context.Context, query string, args ...any) (int64, error) {
	return affected(c.DB.ExecContext(ctx, query, args...))
}

func (c SQLDB) Query(ctx context.Context, query string, args ...any) (Rows, error) {
	return rowsOf(c.DB.QueryContext(ctx, query, args...))
}

func (c SQLDB) QueryRow(ctx context.Context, query string, args ...any) Row {
	return c.DB.QueryRowContext(ctx, query, args...)
}

func affected(res sql.Result, err error) (int64, error) {
	if err != nil {
		return 0, err
	}
	return res.RowsAffected()
}

func rowsOf(rows *sql.Rows, err error) (Rows, error) {
	if err != nil {
		return nil, err
	}
	return sqlRows{rows}, nil
}

type sqlRows struct{ *sql.Rows }

func (r sqlRows) Close() { _ = r.Rows.Close() }

// TxOf is the *sql.Tx of a Conn that BeginSQL passed in.
func TxOf(c Conn) *sql.Tx { return c.(SQLTx).Tx }

// BeginSQL runs fn in one transaction of db.
func BeginSQL(db *sql.DB) func(ctx context.Context, fn func(tx Conn) error) error {
	return func(ctx context.Context, fn func(tx Conn) error) error {
		tx, err := db.BeginTx(ctx, nil)
		if err != nil {
			return err
		}
		if err := fn(SQLTx{tx}); err != nil {
			_ = tx.Rollback()
			return err
		}
		return tx.Commit()
	}
}
