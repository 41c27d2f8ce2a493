// Package request builds one model request: the models and endpoints a
// session may call (Model, Provider) with their prices, the context rebuilt
// from the stored messages (ContextEntry, ContextMessages) and the
// session's kept view of them between requests (ContextCache), and what
// is known of each model's context window (Models: configured, cached,
// discovered from the endpoint, learned from a refusal or a truncation).
//
// Files: model.go (Model, Provider, ParseModels), models.go (Models, window
// discovery), cost.go (prices, a turn's usage), context.go (the context
// rebuilt from stored messages), ctxcache.go (the kept view and its request
// entries).
//
// It may import the wire types (acp), the store's domain types
// (internal/persistence), the model client (internal/provider), compaction
// and the tools (internal/agent/tool); never internal/agent or a package
// above it.
package request
