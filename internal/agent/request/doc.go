// Package request holds what one model request is built from and measured
// against: the models and endpoints a session may call with their prices
// and context windows (Model, Provider, Models: configured, cached,
// discovered from the endpoint, learned from a refusal or a truncation),
// the measure of a request against its model's window (Meter, the
// per-turn limits scaled to it), the context rebuilt from the stored
// messages (ContextEntry, ContextMessages) and the session's kept view of
// them between requests (ContextCache).
//
// Files: model.go (Model, Provider, ParseModels, prices, a turn's usage),
// models.go (Models and the window discovery), meter.go (Meter, the limits,
// how to make room), context.go (the context rebuilt from stored messages),
// ctxcache.go (the kept view and its request entries).
//
// It may import the wire types (acp), the store's domain types
// (internal/persistence), the model client (internal/provider) and
// internal/compaction, and internal/agent/tool (a model's edit tool);
// never internal/agent or a package above it.
package request
