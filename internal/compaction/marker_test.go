package compaction

import (
	"encoding/json"
	"testing"

	"github.com/crow-acp/crow-acp/internal/persistence"
)

// TestIsPruneMarker: a marker is the tool result pruning leaves; an
// assistant message's meta (read for every message of a replay) is not
// decoded to find out.
func TestIsPruneMarker(t *testing.T) {
	marker := metaJSON(PolicyPrune, nil, 42)
	for _, c := range []struct {
		m    persistence.Message
		want bool
	}{
		{persistence.Message{Role: persistence.RoleTool, Meta: marker}, true},
		{persistence.Message{Role: persistence.RoleTool, Meta: json.RawMessage(`{"title":"Read main.go","kind":"read"}`)}, false},
		{persistence.Message{Role: persistence.RoleTool}, false},
		{persistence.Message{Role: persistence.RoleAssistant, Meta: marker}, false},
		{persistence.Message{Role: persistence.RoleSummary, Meta: metaJSON(PolicyPrune, nil, 0)}, false},
	} {
		if got := IsPruneMarker(&c.m); got != c.want {
			t.Errorf("IsPruneMarker(%s, %s) = %v, want %v", c.m.Role, c.m.Meta, got, c.want)
		}
	}
}
