package sqlcore

import (
	"encoding/json"
	"fmt"
)

// JSONSlice encodes v for a JSON column (message parts, tool calls,
// SQLite's id lists) the same way in both stores, so that a session moves
// between them unchanged: nil is NULL, empty is "[]".
func JSONSlice[T any](field string, v []T) (any, error) {
	if v == nil {
		return nil, nil
	}
	b, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("encode %s: %w", field, err)
	}
	return string(b), nil
}

// DecodeJSONSlice is the inverse of JSONSlice.
func DecodeJSONSlice[T any](field string, b []byte) ([]T, error) {
	if b == nil {
		return nil, nil
	}
	if string(b) == "[]" { // most rows (an assistant reply with no tool calls): no decoder
		return []T{}, nil
	}
	var v []T
	if err := json.Unmarshal(b, &v); err != nil {
		return nil, fmt.Errorf("decode %s: %w", field, err)
	}
	return v, nil
}
