package tool

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestTerseDropsParameterProse: every built-in keeps its name, its own
// description, its parameters and required list, loses the parameters'
// descriptions, and the original definition is untouched.
func TestTerseDropsParameterProse(t *testing.T) {
	for _, tl := range append(Builtins(), applyPatch{}) {
		full := tl.Definition()
		before, _ := json.Marshal(full.Parameters)
		terse := Terse(full)
		after, _ := json.Marshal(full.Parameters)
		if string(before) != string(after) {
			t.Fatalf("%s: Terse changed the original schema", full.Name)
		}
		got, _ := json.Marshal(terse.Parameters)
		if terse.Name != full.Name || terse.Description != full.Description {
			t.Errorf("%s: name or description changed", full.Name)
		}
		if strings.Contains(string(got), `"description"`) {
			t.Errorf("%s: a parameter description is left: %s", full.Name, got)
		}
		fp, _ := full.Parameters["properties"].(map[string]any)
		tp, _ := terse.Parameters["properties"].(map[string]any)
		if len(fp) != len(tp) {
			t.Errorf("%s: %d parameters, want %d", full.Name, len(tp), len(fp))
		}
		if r1, r2 := full.Parameters["required"], terse.Parameters["required"]; len(jsonOf(r1)) != len(jsonOf(r2)) {
			t.Errorf("%s: required list changed: %v -> %v", full.Name, r1, r2)
		}
		if len(got) >= len(before) && strings.Contains(string(before), `"description"`) {
			t.Errorf("%s: terse schema is not smaller (%d >= %d bytes)", full.Name, len(got), len(before))
		}
	}
}

func jsonOf(v any) string { b, _ := json.Marshal(v); return string(b) }
