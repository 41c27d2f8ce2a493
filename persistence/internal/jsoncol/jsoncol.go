// Package jsoncol encodes the JSON columns both stores keep (message parts,
// tool calls, compaction id lists) the same way, so that a session moves
// between SQLite and PostgreSQL unchanged: nil is stored as NULL, an empty
// slice as [].
package jsoncol

import (
	"encoding/json"
	"fmt"
)

// Slice encodes v for a JSON column; nil is NULL, empty is "[]".
func Slice[T any](field string, v []T) (any, error) {
	if v == nil {
		return nil, nil
	}
	b, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("encode %s: %w", field, err)
	}
	return string(b), nil
}

// DecodeSlice is the inverse of Slice.
func DecodeSlice[T any](field string, b []byte) ([]T, error) {
	if b == nil {
		return nil, nil
	}
	var v []T
	if err := json.Unmarshal(b, &v); err != nil {
		return nil, fmt.Errorf("decode %s: %w", field, err)
	}
	return v, nil
}
