package persistence

import (
	"context"
	"time"
)

// ModelWindow is a model's context window as its endpoint reported it
// (discovered with the endpoint's own API, or learned from a refusal), kept
// so that the next process knows it without asking.
type ModelWindow struct {
	Endpoint  string // the endpoint's base URL
	Model     string
	Tokens    int
	Source    string // where it came from, for `doctor` and `config show`
	UpdatedAt time.Time
}

// WindowCache keeps ModelWindows per endpoint and model. Both backends keep
// one (backend.Store); a caller without one asks the endpoint again.
type WindowCache interface {
	// ModelWindow returns the cached window; ErrNotFound when there is none.
	ModelWindow(ctx context.Context, endpoint, model string) (ModelWindow, error)
	// SetModelWindow inserts or replaces the window of (Endpoint, Model);
	// UpdatedAt is set when zero.
	SetModelWindow(ctx context.Context, w *ModelWindow) error
	// DeleteModelWindows forgets the cached windows of endpoint and model
	// ("" matches any) and reports how many there were.
	DeleteModelWindows(ctx context.Context, endpoint, model string) (int, error)
}
