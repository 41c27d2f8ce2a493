package provider

import "testing"

// Regression tests for inputs the fuzz targets found.

// FuzzParser: a server sent the same id at two indexes. The history then
// held two results for one id and every later request was rejected.
func TestParserDuplicateIDAcrossIndexes(t *testing.T) {
	var p Parser
	feed(t, &p, toolDelta(`{"index":0,"id":"a","function":{"name":"x","arguments":"{}"}},{"index":1,"id":"a","function":{"name":"y","arguments":"{}"}}`, "tool_calls"))
	r := p.Finish()
	if len(r.ToolCalls) != 2 {
		t.Fatalf("calls %+v", r.ToolCalls)
	}
	if r.ToolCalls[0].ID != "a" {
		t.Errorf("first call lost its id: %q", r.ToolCalls[0].ID)
	}
	if r.ToolCalls[1].ID == "a" || r.ToolCalls[1].ID == "" {
		t.Errorf("second call id %q: want a fresh unique id", r.ToolCalls[1].ID)
	}
	if r.ToolCalls[1].Name != "y" {
		t.Errorf("second call %+v", r.ToolCalls[1])
	}
}
