package tool

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

func fakeMCPSet(trusted []string, servers map[string][]*mcp.Tool, order ...string) *MCPSet {
	s := &MCPSet{trusted: map[string]bool{}}
	for _, n := range trusted {
		s.trusted[n] = true
	}
	for _, name := range order {
		s.conns = append(s.conns, &mcpConn{name: name, tools: servers[name]})
	}
	s.nameTools()
	return s
}

// Issue 13 case 8: server a's tool b__c and server a__b's tool c would both
// be a__b__c, one shadowing the other and both sharing one permission rule.
// Neither is offered; the user is told; other tools are unaffected.
func TestMCPNameCollisionsRefused(t *testing.T) {
	for _, order := range [][]string{{"a", "a__b", "x.y", "x_y"}, {"x_y", "x.y", "a__b", "a"}} {
		s := fakeMCPSet(nil, map[string][]*mcp.Tool{
			"a":    {{Name: "b__c"}, {Name: "ok"}},
			"a__b": {{Name: "c"}},
			"x.y":  {{Name: "t"}},
			"x_y":  {{Name: "t"}},
		}, order...)
		var names []string
		for _, tl := range s.Tools() {
			names = append(names, tl.Definition().Name)
		}
		if strings.Join(names, ",") != "a__ok" {
			t.Errorf("order %v: tools offered %v, want only a__ok", order, names)
		}
		f := strings.Join(s.TakeFailures(), "\n")
		for _, want := range []string{`"b__c" of server "a"`, `"c" of server "a__b"`, "a__b__c", `"t" of server "x.y"`, "x_y__t"} {
			if !strings.Contains(f, want) {
				t.Errorf("order %v: the failure does not say %s:\n%s", order, want, f)
			}
		}
	}
}

// Issue 13 case 7: a readOnlyHint annotation is the server's claim; it
// skips permission only for a server the user trusts.
func TestMCPAnnotationsNeedTrust(t *testing.T) {
	ro := &mcp.Tool{Name: "wipe", Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}}
	for _, trusted := range []bool{false, true} {
		var tr []string
		if trusted {
			tr = []string{"srv"}
		}
		s := fakeMCPSet(tr, map[string][]*mcp.Tool{"srv": {ro}}, "srv")
		act, err := s.Tools()[0].Prepare(&Env{}, json.RawMessage(`{}`))
		if err != nil {
			t.Fatal(err)
		}
		if want := map[bool]Access{false: AccessOther, true: AccessRead}[trusted]; act.Access != want {
			t.Errorf("trusted %v: access %d, want %d", trusted, act.Access, want)
		}
		if act.Server != "srv" {
			t.Errorf("the action does not name its server: %q", act.Server)
		}
	}
}

// A server's tools are bounded in what they add to every model request: a
// schema over MaxMCPToolSchemaBytes is not offered, tools past
// MaxMCPToolsPerServer neither, and the user is told of both.
func TestMCPToolsBounded(t *testing.T) {
	big := map[string]any{"type": "object", "description": strings.Repeat("x", MaxMCPToolSchemaBytes)}
	small := map[string]any{"type": "object"}
	var tools []*mcp.Tool
	tools = append(tools, &mcp.Tool{Name: "huge", InputSchema: big})
	for i := range MaxMCPToolsPerServer + 5 {
		tools = append(tools, &mcp.Tool{Name: fmt.Sprint("t", i), InputSchema: small})
	}
	c := &mcpConn{name: "srv", tools: tools}
	notes := strings.Join(c.boundTools(), "\n")
	if len(c.tools) != MaxMCPToolsPerServer || c.tools[0].Name != "t0" {
		t.Errorf("kept %d tools starting with %q, want %d starting with t0", len(c.tools), c.tools[0].Name, MaxMCPToolsPerServer)
	}
	for _, want := range []string{`"huge" of server "srv"`, fmt.Sprintf("lists %d tools", MaxMCPToolsPerServer+5)} {
		if !strings.Contains(notes, want) {
			t.Errorf("the notes do not say %s:\n%s", want, notes)
		}
	}
	c = &mcpConn{name: "ok", tools: tools[1:4]}
	if notes := c.boundTools(); len(notes) != 0 || len(c.tools) != 3 {
		t.Errorf("a small server: notes %v, %d tools kept; want none, 3", notes, len(c.tools))
	}
}
