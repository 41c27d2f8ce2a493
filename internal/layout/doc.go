// Package layout holds no code: its test keeps the package map of
// docs/development.md true. Each package of the module may import only the
// packages its rule names (rules in layout_test.go), so that every arrow
// between packages points down: cmd → acp → agent → provider, compaction →
// persistence → leaves.
package layout
