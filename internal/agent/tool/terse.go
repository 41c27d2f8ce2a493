package tool

import "github.com/crow-acp/crow-acp/internal/provider"

// Terse is t with the descriptions of its parameters left out (the tool's
// own description stays): for windows so small that the schemas' prose
// would crowd out the conversation. Parameter names, types, enums and
// required lists are kept, so calls are still validated the same way.
// Parameters is copied, never changed in place (MCP tools share theirs).
func Terse(t provider.Tool) provider.Tool {
	if p, ok := terseSchema(t.Parameters).(map[string]any); ok {
		t.Parameters = p
	}
	return t
}

// terseSchema copies a JSON schema value without "description" keys below
// "properties" (a property named "description" is kept).
func terseSchema(v any) any {
	switch x := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, val := range x {
			if k == "properties" {
				if props, ok := val.(map[string]any); ok {
					cp := make(map[string]any, len(props))
					for name, sch := range props {
						cp[name] = dropDescription(terseSchema(sch))
					}
					out[k] = cp
					continue
				}
			}
			out[k] = terseSchema(val)
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = terseSchema(e)
		}
		return out
	}
	return v
}

func dropDescription(v any) any {
	if m, ok := v.(map[string]any); ok {
		delete(m, "description")
		if items, ok := m["items"].(map[string]any); ok {
			delete(items, "description")
		}
	}
	return v
}
