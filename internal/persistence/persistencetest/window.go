package persistencetest

import (
	"errors"
	"testing"

	"github.com/crow-acp/crow-acp/internal/persistence"
)

// testWindowCache: a store that caches model windows keeps one per
// endpoint and model, replaces it, and answers ErrNotFound otherwise.
func testWindowCache(t *testing.T, s persistence.Store) {
	wc, ok := s.(persistence.WindowCache)
	if !ok {
		t.Skip("the store does not cache model windows")
	}
	ctx := t.Context()
	if _, err := wc.ModelWindow(ctx, "http://a/v1", "m"); !errors.Is(err, persistence.ErrNotFound) {
		t.Fatalf("empty cache: %v, want ErrNotFound", err)
	}
	for _, w := range []persistence.ModelWindow{
		{Endpoint: "http://a/v1", Model: "m", Tokens: 4096, Source: "first"},
		{Endpoint: "http://a/v1", Model: "m", Tokens: 8192, Source: "discovered: GET /models (max_model_len)"},
		{Endpoint: "http://b/v1", Model: "m", Tokens: 32768, Source: "other endpoint"},
	} {
		if err := wc.SetModelWindow(ctx, &w); err != nil || w.UpdatedAt.IsZero() {
			t.Fatalf("SetModelWindow(%+v): %v", w, err)
		}
	}
	got, err := wc.ModelWindow(ctx, "http://a/v1", "m")
	if err != nil || got.Tokens != 8192 || got.Source != "discovered: GET /models (max_model_len)" || got.UpdatedAt.IsZero() {
		t.Fatalf("ModelWindow = %+v, %v", got, err)
	}
	if err := wc.SetModelWindow(ctx, &persistence.ModelWindow{Endpoint: "http://a/v1", Model: "m"}); err == nil {
		t.Fatal("a window of 0 tokens was stored")
	}
	must(t, wc.SetModelWindow(ctx, &persistence.ModelWindow{Endpoint: "http://a/v1", Model: "n", Tokens: 300, Source: "learned"}))
	// Forgetting one model of one endpoint leaves the others.
	if n, err := wc.DeleteModelWindows(ctx, "http://a/v1", "m"); err != nil || n != 1 {
		t.Fatalf("DeleteModelWindows(a, m) = %d, %v; want 1", n, err)
	}
	if _, err := wc.ModelWindow(ctx, "http://a/v1", "m"); !errors.Is(err, persistence.ErrNotFound) {
		t.Fatalf("a forgotten window is still there: %v", err)
	}
	if got, err := wc.ModelWindow(ctx, "http://b/v1", "m"); err != nil || got.Tokens != 32768 {
		t.Fatalf("another endpoint's window went too: %+v, %v", got, err)
	}
	// "" matches any endpoint and model.
	if n, err := wc.DeleteModelWindows(ctx, "", ""); err != nil || n != 2 {
		t.Fatalf("DeleteModelWindows(all) = %d, %v; want 2", n, err)
	}
	if n, err := wc.DeleteModelWindows(ctx, "", ""); err != nil || n != 0 {
		t.Fatalf("DeleteModelWindows of an empty cache = %d, %v", n, err)
	}
}
