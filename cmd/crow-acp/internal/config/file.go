package config

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"os"
	"reflect"
	"slices"
	"strconv"
	"strings"

	"github.com/pelletier/go-toml/v2"

	"github.com/crow-acp/crow-acp/internal/agent/tool"
	"github.com/crow-acp/crow-acp/internal/provider"
	"github.com/pelletier/go-toml/v2/unstable"

	"github.com/crow-acp/crow-acp/internal/compaction"
)

// readConfigFile reads and decodes path. A missing file is reported with
// os.ErrNotExist so that the caller can decide whether it matters.
func readConfigFile(path string) (*loadedFile, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return parseConfigFile(path, data)
}

// parseConfigFile decodes data strictly: unknown keys and wrong types are
// errors that name the line and the key.
func parseConfigFile(path string, data []byte) (*loadedFile, error) {
	f := &loadedFile{Path: path}
	dec := toml.NewDecoder(bytes.NewReader(data)).DisallowUnknownFields()
	f.lines = keyLines(data)
	if err := dec.Decode(&f.cfg); err != nil {
		return nil, f.decodeError(data, err)
	}
	if err := f.validate(); err != nil {
		return nil, err
	}
	return f, nil
}

// decodeError names the line and the key of a decoding error. go-toml
// names keys without array indexes; the line tells which entry it was.
func (f *loadedFile) decodeError(data []byte, err error) error {
	path := f.Path
	keyAt := func(row int, key []string) string {
		k := strings.Join(key, ".")
		for full, line := range f.lines {
			if line == row && strings.HasSuffix(full, "."+key[len(key)-1]) && strings.Contains(full, "[") {
				return full
			}
		}
		return k
	}
	var strict *toml.StrictMissingError
	if errors.As(err, &strict) && len(strict.Errors) > 0 {
		e := strict.Errors[0]
		row, _ := e.Position()
		key := keyAt(row, e.Key())
		msg := "unknown key (see config.example.toml for the keys crow-acp reads)"
		if k := e.Key(); len(k) > 1 && topLevelKey(k[len(k)-1]) {
			// TOML puts a key below a [table] header into that table.
			msg = fmt.Sprintf("unknown key: %s is a top-level key, so it must come before the first [table]", k[len(k)-1])
		}
		if n := len(strict.Errors); n > 1 {
			msg += fmt.Sprintf("; %d more unknown keys", n-1)
		}
		return &fileError{Path: path, Line: row, Key: key, Msg: msg}
	}
	var de *toml.DecodeError
	if errors.As(err, &de) {
		row, _ := de.Position()
		msg := strings.TrimPrefix(de.Error(), "toml: ")
		msg = friendlyTypeError(msg)
		if len(de.Key()) == 0 {
			// A syntax error: show the line as written.
			if lines := strings.Split(string(data), "\n"); row >= 1 && row <= len(lines) {
				msg += fmt.Sprintf(" in %q", strings.TrimSpace(lines[row-1]))
			}
			return &fileError{Path: path, Line: row, Msg: msg}
		}
		return &fileError{Path: path, Line: row, Key: keyAt(row, de.Key()), Msg: msg}
	}
	return &fileError{Path: path, Msg: err.Error()}
}

// topLevelKey reports whether name is a scalar key of the file's top level.
func topLevelKey(name string) bool {
	t := reflect.TypeFor[fileConfig]()
	for i := range t.NumField() {
		f := t.Field(i)
		if f.Type.Kind() == reflect.Pointer && strings.Split(f.Tag.Get("toml"), ",")[0] == name {
			return true
		}
	}
	return false
}

// friendlyTypeError rewrites go-toml's "cannot decode TOML string into
// struct field main.modelFile.ContextWindow of type int" in TOML terms.
func friendlyTypeError(msg string) string {
	const prefix = "cannot decode TOML "
	if !strings.HasPrefix(msg, prefix) {
		return msg
	}
	got, rest, ok := strings.Cut(strings.TrimPrefix(msg, prefix), " into ")
	if !ok {
		return msg
	}
	want := rest
	if i := strings.LastIndex(rest, " of type "); i >= 0 {
		want = rest[i+len(" of type "):]
	}
	want = strings.TrimPrefix(want, "*")
	switch {
	case want == "int":
		want = "an integer"
	case want == "float64":
		want = "a number"
	case want == "bool":
		want = "true or false"
	case want == "string":
		want = "a string"
	case strings.HasPrefix(want, "map["), strings.HasPrefix(want, "main."):
		want = "a table"
	case strings.HasPrefix(want, "[]"):
		want = "an array"
	}
	return fmt.Sprintf("expected %s, got a TOML %s", want, got)
}

// keyLines maps each key of the document to the line it is written on.
// Array tables are numbered from 0 in order ("models[0].name").
func keyLines(data []byte) map[string]int {
	out := make(map[string]int)
	p := unstable.Parser{}
	p.Reset(data)
	arrays := make(map[string]int) // array table path -> count seen
	prefix := ""
	lineOf := func(n *unstable.Node) int { return p.Shape(n.Raw).Start.Line }
	keyOf := func(it unstable.Iterator) (string, *unstable.Node) {
		var parts []string
		var first *unstable.Node
		for it.Next() {
			n := it.Node()
			if first == nil {
				first = n
			}
			parts = append(parts, string(n.Data))
		}
		return strings.Join(parts, "."), first
	}
	for p.NextExpression() {
		e := p.Expression()
		switch e.Kind {
		case unstable.Table:
			k, n := keyOf(e.Key())
			prefix = k
			if n != nil {
				out[k] = lineOf(n)
			}
		case unstable.ArrayTable:
			k, n := keyOf(e.Key())
			idx := arrays[k]
			arrays[k] = idx + 1
			prefix = k + "[" + strconv.Itoa(idx) + "]"
			if n != nil {
				out[prefix] = lineOf(n)
			}
		case unstable.KeyValue:
			k, n := keyOf(e.Key())
			if prefix != "" {
				k = prefix + "." + k
			}
			if n != nil {
				out[k] = lineOf(n)
			}
		}
	}
	return out // a parse error was already reported by the decoder
}

// validate checks values the types cannot: ranges, references between
// tables, known enumerations.
func (f *loadedFile) validate() error {
	c := &f.cfg
	for _, name := range sortedKeys(c.Providers) {
		p := c.Providers[name]
		key := "providers." + name
		if p.BaseURL != nil {
			if err := checkBaseURL(*p.BaseURL); err != nil {
				return f.errorAt(key+".base_url", "%v", err)
			}
		}
		if p.API != nil && *p.API != apiChat && *p.API != apiResponses {
			return f.errorAt(key+".api", "%q: use %q (chat completions) or %q (OpenAI's Responses API)", *p.API, apiChat, apiResponses)
		}
		if p.APIKeyEnv != nil && !validEnvName(*p.APIKeyEnv) {
			return f.errorAt(key+".api_key_env", "%q is not an environment variable name (it names the variable that holds the key, never the key itself)", *p.APIKeyEnv)
		}
		for h := range p.Headers {
			if h == "" || strings.ContainsAny(h, " \t\r\n:") {
				return f.errorAt(key+".headers", "invalid header name %q", h)
			}
		}
	}
	if c.Provider != nil {
		if _, ok := c.Providers[*c.Provider]; !ok {
			return f.errorAt("provider", "no [providers.%s] table in this file", *c.Provider)
		}
	} else if len(c.Providers) > 1 {
		return f.errorAt("providers", "%d providers are defined: set provider = \"NAME\" to choose the default one", len(c.Providers))
	}
	seen := make(map[string]int)
	for i, m := range c.Models {
		key := fmt.Sprintf("models[%d]", i)
		if m.Name == nil || *m.Name == "" {
			return f.errorAt(key, "a [[models]] entry needs name = \"...\" (the model name sent to the endpoint)")
		}
		if j, dup := seen[*m.Name]; dup {
			return f.errorAt(key+".name", "model %q is already defined at line %d", *m.Name, f.line(fmt.Sprintf("models[%d].name", j)))
		}
		seen[*m.Name] = i
		if m.Provider != nil {
			if _, ok := c.Providers[*m.Provider]; !ok {
				return f.errorAt(key+".provider", "no [providers.%s] table in this file", *m.Provider)
			}
		}
		if m.ContextWindow != nil && *m.ContextWindow < 1024 {
			return f.errorAt(key+".context_window", "%d tokens is too small (at least 1024)", *m.ContextWindow)
		}
		if m.OutputReserve != nil {
			if *m.OutputReserve < 1 {
				return f.errorAt(key+".output_reserve", "must be a positive number of tokens")
			}
			if m.ContextWindow != nil && *m.OutputReserve >= *m.ContextWindow {
				return f.errorAt(key+".output_reserve", "%d must be smaller than context_window (%d)", *m.OutputReserve, *m.ContextWindow)
			}
		}
		if m.ReasoningHistory != nil {
			if _, ok := provider.ParseReasoningHistory(*m.ReasoningHistory); !ok {
				return f.errorAt(key+".reasoning_history", "unknown value %q: use auto, strip, echo or require", *m.ReasoningHistory)
			}
		}
		if m.EditTool != nil && *m.EditTool != tool.EditFileTool && *m.EditTool != tool.ApplyPatchTool {
			return f.errorAt(key+".edit_tool", "unknown value %q: use edit_file or apply_patch", *m.EditTool)
		}
		if m.InlineThink != nil {
			if _, ok := provider.ParseInlineThink(*m.InlineThink); !ok {
				return f.errorAt(key+".inline_think", "unknown value %q: use auto, tag or open", *m.InlineThink)
			}
		}
		if m.ToolCallIDs != nil {
			if _, ok := provider.ParseToolCallIDStyle(*m.ToolCallIDs); !ok {
				return f.errorAt(key+".tool_call_ids", "unknown value %q: use auto, as-is or mistral", *m.ToolCallIDs)
			}
		}
		if m.Tokenizer != nil && !knownEncoding(*m.Tokenizer) {
			return f.errorAt(key+".tokenizer", "unknown encoding %q: use one of %s", *m.Tokenizer, strings.Join(tokenizerEncodings, ", "))
		}
		for _, pr := range []struct {
			name string
			v    *float64
		}{{"input_price", m.InputPrice}, {"output_price", m.OutputPrice}, {"cached_input_price", m.CachedInputPrice}} {
			if pr.v != nil && !(*pr.v >= 0 && !math.IsInf(*pr.v, 1)) {
				return f.errorAt(key+"."+pr.name, "a price must be a finite number of 0 or more, not negative, NaN or infinite (it is %v)", *pr.v)
			}
		}
	}
	if c.MaxModelCalls != nil && *c.MaxModelCalls < 1 {
		return f.errorAt("max_model_calls", "must be at least 1")
	}
	if err := f.validateToolsAndSessions(); err != nil {
		return err
	}
	if err := f.validateMCP(); err != nil {
		return err
	}
	if err := f.validateEnvPolicy(); err != nil {
		return err
	}
	if c.Log.Level != nil {
		if err := checkLogLevel(*c.Log.Level); err != nil {
			return f.errorAt("log.level", "%v", err)
		}
	}
	if c.Database.Path != nil && *c.Database.Path == "" {
		return f.errorAt("database.path", "must not be empty (remove the key to use the default)")
	}
	if t := c.Compaction.Threshold; t != nil && (*t <= 0 || *t > 1) {
		return f.errorAt("compaction.threshold", "%v is out of range: a fraction of the window, above 0 and at most 1 (default 0.9)", *t)
	}
	if t := c.Compaction.Target; t != nil && (*t <= 0 || *t > 1) {
		return f.errorAt("compaction.target", "%v is out of range: a fraction of the window, above 0 and at most the threshold", *t)
	}
	for _, k := range []struct {
		key string
		v   *int
	}{{"keep_recent", c.Compaction.KeepRecent}, {"keep_turns", c.Compaction.KeepTurns}, {"prune_protect_turns", c.Compaction.PruneProtectTurns},
		{"prune_protect_tokens", c.Compaction.PruneProtectTokens}, {"prune_minimum", c.Compaction.PruneMinimum}} {
		if k.v != nil && *k.v < 0 {
			return f.errorAt("compaction."+k.key, "must not be negative")
		}
	}
	if m := c.Permission.Mode; m != nil && !knownMode(*m) {
		return f.errorAt("permissions.mode", "unknown mode %q: use one of %s", *m, strings.Join(permissionModes, ", "))
	}
	if err := c.Limits.validateFile(f, c.Requests); err != nil {
		return err
	}
	return nil
}

// tokenizerEncodings are the token counters a model may name: "auto" (the
// model's tiktoken encoding when known, else the estimator), "estimate" (a
// generous character-based estimator, for local models whose vocabularies
// no offline table matches), or a tiktoken encoding.
var tokenizerEncodings = compaction.Encodings

func knownEncoding(s string) bool { return slices.Contains(tokenizerEncodings, s) }

// permissionModes are the session modes a default may name.
var permissionModes = []string{"default", "accept_edits", "plan", "bypass"}

func knownMode(s string) bool {
	for _, m := range permissionModes {
		if s == m {
			return true
		}
	}
	return false
}

func validEnvName(s string) bool {
	if s == "" {
		return false
	}
	for i, r := range s {
		switch {
		case r == '_', r >= 'A' && r <= 'Z', r >= 'a' && r <= 'z':
		case r >= '0' && r <= '9' && i > 0:
		default:
			return false
		}
	}
	return true
}

func checkLogLevel(level string) error {
	switch level {
	case "debug", "info", "warn", "error":
		return nil
	}
	return fmt.Errorf("invalid log level %q: use debug, info, warn or error", level)
}

func checkBaseURL(u string) error {
	if u != "" && !strings.HasPrefix(u, "http://") && !strings.HasPrefix(u, "https://") {
		return fmt.Errorf("invalid base URL %q: it must start with http:// or https://", u)
	}
	return nil
}
