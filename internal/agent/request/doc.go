// Package request builds one model request: the models and endpoints a
// session may call (Model, Provider) with their prices, the context rebuilt
// from the stored messages (ContextEntry, ContextMessages) and the
// session's kept view of them between requests (ContextCache).
//
// It may import the wire types (acp), the store's domain types
// (internal/persistence), the model client (internal/provider), compaction
// and the tools (internal/agent/tool); never internal/agent or a package
// above it.
package request
