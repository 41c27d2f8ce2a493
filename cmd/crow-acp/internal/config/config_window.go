package config

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/crow-acp/crow-acp/internal/agent/request"
	"github.com/crow-acp/crow-acp/internal/persistence"
	"github.com/crow-acp/crow-acp/internal/persistence/backend"
)

// cachedWindow is the selected model's window as its endpoint told it
// (discovered or learned from a refusal) and the agent cached in the
// session database. It never creates a database: a SQLite file must exist.
func (c *Settings) cachedWindow(ctx context.Context) (persistence.ModelWindow, bool) {
	if c.LocalDB() {
		if _, err := os.Stat(c.DB.V); err != nil {
			return persistence.ModelWindow{}, false
		}
	}
	ctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	store, err := c.OpenStore(ctx)
	if err != nil {
		return persistence.ModelWindow{}, false
	}
	defer store.Close()
	w, err := store.ModelWindow(ctx, c.BaseURL.V, c.Model.V)
	return w, err == nil && w.Tokens > 0
}

// WithCachedWindow fills the context_window row with the selected model's
// effective window and where it comes from, by the rule a new process
// applies (request.EffectiveWindow): a configured window; else one the agent
// cached from the endpoint (discovered, or learned from a refusal), unless
// it is under the floor; else crow-acp's table of known models; else the
// endpoint is asked at start.
func (c *Settings) WithCachedWindow(ctx context.Context, rows []Row) []Row {
	var cached *persistence.ModelWindow
	if w, ok := c.cachedWindow(ctx); ok {
		cached = &w
	}
	configured, from := c.ConfiguredWindow()
	tokens, source := request.EffectiveWindow(c.Model.V, configured, cached)
	for i := range rows {
		if rows[i].Key != "context_window" {
			continue
		}
		r := &rows[i]
		switch {
		case source == request.WindowConfigured:
			r.Value, r.From = fmt.Sprintf("%d (configured)", tokens), from
		case cached != nil && source == cached.Source:
			r.Value = fmt.Sprintf("%d (%s)", tokens, source)
			r.From = c.cacheSource(*cached)
		case source == request.WindowBuiltIn:
			r.Value = fmt.Sprintf("%d (built in: crow-acp knows %s)", tokens, c.Model.V)
		default:
			r.Value = fmt.Sprintf("(not configured: asked from the endpoint at start; %d is assumed until it answers)", tokens)
		}
		if cached != nil && source != cached.Source {
			r.Value += "; " + unusedCache(*cached, source)
		}
	}
	return rows
}

// ConfiguredWindow is the selected model's configured window (0: none)
// and where it was set: CROW_CONTEXT_WINDOW or the file's context_window
// (ContextWindow), else the window= of its CROW_MODELS entry.
func (c *Settings) ConfiguredWindow() (int, Source) {
	if c.ContextWindow.V > 0 || c.Selected == nil || c.Selected.ContextWindow <= 0 {
		return c.ContextWindow.V, c.ContextWindow.From
	}
	return c.Selected.ContextWindow, c.ModelsFrom
}

// unusedCache says why a cached window does not apply.
func unusedCache(w persistence.ModelWindow, source string) string {
	why := "a discovered window does not replace a built-in one"
	switch {
	case source == request.WindowConfigured:
		why = "the configured window wins"
	case w.Tokens < request.MinLearnedWindow:
		why = fmt.Sprintf("it is under the %d-token floor", request.MinLearnedWindow)
	}
	return fmt.Sprintf("the cached %d (%s) is not used: %s; crow-acp config forget-window clears it", w.Tokens, w.Source, why)
}

// cacheSource names the database a cached window was read from.
func (c *Settings) cacheSource(w persistence.ModelWindow) Source {
	return Source{Kind: "database", Detail: backend.Describe(c.DB.V) + ", cached " + w.UpdatedAt.UTC().Format(time.RFC3339)}
}

// CachedWindow is the window the agent cached for the selected model on
// its endpoint (ok false: none, or no database).
func (c *Settings) CachedWindow(ctx context.Context) (w persistence.ModelWindow, ok bool) {
	return c.cachedWindow(ctx)
}

// ForgetWindows deletes the windows the agent cached for the selected
// model's endpoint and model, or every cached window when all is set. It
// returns how many were deleted; it never creates a database.
func (c *Settings) ForgetWindows(ctx context.Context, all bool) (int, error) {
	if c.LocalDB() {
		if _, err := os.Stat(c.DB.V); err != nil {
			return 0, nil // no database: nothing was learned
		}
	}
	store, err := c.OpenStore(ctx)
	if err != nil {
		return 0, err
	}
	defer store.Close()
	endpoint, model := c.BaseURL.V, c.Model.V
	if all {
		endpoint, model = "", ""
	}
	return store.DeleteModelWindows(ctx, endpoint, model)
}

// OpenStore opens the session database the configuration names: a SQLite
// file, or PostgreSQL for a postgres:// URL. Errors never show a password.
func (c *Settings) OpenStore(ctx context.Context) (backend.Store, error) {
	store, err := backend.Open(ctx, c.DB.V)
	if err != nil {
		return nil, c.OpenFailed(err)
	}
	return store, nil
}

// OpenFailed is why the session database could not be opened, as the
// commands and the requests that need it say it.
func (c *Settings) OpenFailed(err error) error {
	return fmt.Errorf("cannot open the session database %s: %w", backend.Describe(c.DB.V), err)
}

// LocalDB reports whether the session database is a SQLite file.
func (c *Settings) LocalDB() bool {
	kind, err := backend.Parse(c.DB.V)
	return err == nil && kind == backend.SQLite
}
