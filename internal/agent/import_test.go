package agent

import (
	"encoding/json"
	"math"
	"reflect"
	"strings"
	"testing"

	"github.com/crow-acp/crow-acp/internal/agent/request"
	"github.com/crow-acp/crow-acp/internal/persistence"
)

// importedField is what AsImported does with each key of sessionMeta, as
// docs/security.md lists it: a key added to sessionMeta fails
// TestAsImportedDecidesEveryField until it is decided here and there.
var importedField = map[string]string{
	"mcpServers":            "dropped",
	"additionalDirectories": "dropped",
	"model":                 "dropped",
	"cost":                  "kept",
	"used":                  "kept",
	"mode":                  "new",
	"systemPrompt":          "dropped",
	"instructions":          "dropped",
	"forkedFrom":            "dropped",
	"subagent":              "dropped",
	"titleByUser":           "kept",
	"archived":              "dropped",
}

// TestAsImportedDecidesEveryField (issue 37, item 7): a session read from
// a file keeps only the metadata that grants nothing; its mode is the one
// a new session starts in; its id and directory must be plain.
func TestAsImportedDecidesEveryField(t *testing.T) {
	typ := reflect.TypeFor[sessionMeta]()
	for i := range typ.NumField() {
		name, _, _ := strings.Cut(typ.Field(i).Tag.Get("json"), ",")
		if importedField[name] == "" {
			t.Errorf("sessionMeta.%s (%q): AsImported must decide it (and docs/security.md list it)", typ.Field(i).Name, name)
		}
	}
	full := `{"mcpServers":[{"name":"x","command":"/bin/sh"}],"additionalDirectories":["/"],"model":"m",` +
		`"cost":{"USD":1.5,"EUR":-2,"x\u001b[2J":3,"TOOLONGNAME":4},"used":7,"mode":"bypass",` +
		`"systemPrompt":{"mode":"override","text":"t"},"instructions":["a/AGENTS.md"],` +
		`"forkedFrom":{"sessionId":"s","at":"2026-01-01T00:00:00Z"},"subagent":{"parentSessionId":"p","parentToolCallId":"c"},` +
		`"titleByUser":true,"archived":true,"other":1}`
	s := persistence.Session{ID: "sess_0a", Cwd: "/w", Title: "a\x1b]52;c;eA==\x07 title", Metadata: json.RawMessage(full)}
	if err := AsImported(&s, ModePlan); err != nil {
		t.Fatal(err)
	}
	want := `{"cost":{"USD":1.5},"used":7,"mode":"plan","titleByUser":true}`
	if string(s.Metadata) != want || s.Title != "a ]52;c;eA== title" {
		t.Errorf("imported: metadata %s, title %q; want %s", s.Metadata, s.Title, want)
	}
	s = persistence.Session{ID: "s", Metadata: json.RawMessage(`{"used":1e30}`)}
	if err := AsImported(&s, "no such mode"); err != nil || string(s.Metadata) != `{"mode":"default"}` {
		t.Errorf("a used count that is not an int and an unknown default: %v %s", err, s.Metadata)
	}
	s = persistence.Session{ID: "s", Metadata: json.RawMessage(`{"used":` + "9007199254740993" + `}`)}
	if err := AsImported(&s, ModeDefault); err != nil || decodeMeta(s.Metadata).Used != math.MaxInt32 {
		t.Errorf("a huge used count: %v %s", err, s.Metadata)
	}
	for _, bad := range []persistence.Session{
		{ID: ""}, {ID: "sess_\x1b]0;x\x07"}, {ID: "a b"}, {ID: strings.Repeat("a", MaxImportedIDBytes+1)},
		{ID: "s", Cwd: "relative/dir"}, {ID: "s", Cwd: "/w/\x1b[2J"},
	} {
		if err := AsImported(&bad, ModeDefault); err == nil {
			t.Errorf("imported %q in %q", bad.ID, bad.Cwd)
		}
	}
}

// FuzzAsImported: whatever a file holds for a session's id, directory,
// title and metadata, AsImported refuses it or gives a session whose id
// prints as it is, whose metadata encodes and decodes to a known mode,
// finite costs and no key that grants anything.
func FuzzAsImported(f *testing.F) {
	f.Add("sess_0a", "/w", "title", `{"mode":"bypass","instructions":["x"],"cost":{"USD":1}}`)
	f.Add("sess_\x1b]52;c;eA==\x07", "/w/\x00", "\x1b[2J\xff\xfe", `{"cost":{"\u001b":1e308},"used":-5}`)
	f.Add("s", "", strings.Repeat("é", 1000), `{"subagent":{"parentSessionId":"p"},"archived":true}`)
	f.Add("s", "/", "", "\xff\xfe not json")
	f.Add(strings.Repeat("a", 200), "/w", "t", strings.Repeat(`{"a":`, 10000))
	f.Fuzz(func(t *testing.T, id, cwd, title, meta string) {
		s := persistence.Session{ID: id, Cwd: cwd, Title: title, Metadata: json.RawMessage(meta)}
		if AsImported(&s, ModeDefault) != nil {
			return
		}
		if !importableID(s.ID) || s.Title != NormalizeTitle(s.Title) {
			t.Fatalf("imported id %q, title %q", s.ID, s.Title)
		}
		var m map[string]json.RawMessage
		if err := json.Unmarshal(s.Metadata, &m); err != nil {
			t.Fatalf("imported metadata does not decode: %v", err)
		}
		for k := range m {
			if importedField[k] == "dropped" || importedField[k] == "" {
				t.Fatalf("imported metadata keeps %q: %s", k, s.Metadata)
			}
		}
		back := decodeMeta(s.Metadata)
		if back.Mode != ModeDefault || len(back.Cost) != len(request.FiniteCosts(back.Cost)) {
			t.Fatalf("imported metadata %s", s.Metadata)
		}
	})
}
