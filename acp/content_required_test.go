package acp

import (
	"encoding/json"
	"strings"
	"testing"
)

// A block missing a field the schema requires was read as an empty block: a
// prompt of {"type":"text"} reached the model as an empty message.
func TestContentBlockRequiresSchemaFields(t *testing.T) {
	bad := map[string]string{
		`{"type":"text"}`:                            "text",
		`{"type":"image","mimeType":"image/png"}`:    "data",
		`{"type":"audio","data":"AA"}`:               "mimeType",
		`{"type":"resource_link","uri":"file:///a"}`: "name",
		`{"type":"resource"}`:                        "resource",
		`{"type":7,"text":"x"}`:                      "type",
	}
	for in, field := range bad {
		var b ContentBlock
		err := json.Unmarshal([]byte(in), &b)
		if err == nil || !strings.Contains(err.Error(), field) {
			t.Errorf("%s: error %v, want one naming %q", in, err, field)
		}
	}
	var b ContentBlock
	if err := json.Unmarshal([]byte(`{"type":"text","text":""}`), &b); err != nil || b.Text == nil {
		t.Errorf("an explicitly empty text block is valid: %v", err)
	}
}
