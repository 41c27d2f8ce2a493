package config

import (
	"errors"
	"flag"
	"os"
	"reflect"
	"strings"
	"testing"
)

// TestExampleConfig keeps config.example.toml valid and complete: it parses,
// and it sets every key of the schema.
func TestExampleConfig(t *testing.T) {
	const path = "../../../../config.example.toml"
	lf, err := readConfigFile(path)
	if err != nil {
		t.Fatalf("%v", err)
	}
	var missing []string
	walkUnset(reflect.ValueOf(lf.cfg), "", &missing)
	if len(missing) > 0 {
		t.Errorf("config.example.toml does not show these keys: %s", strings.Join(missing, ", "))
	}
	// And it loads as a whole configuration.
	fs := flag.NewFlagSet("t", flag.ContinueOnError)
	cf := AddFlags(fs, FlagsAll)
	if err := fs.Parse([]string{"--config", path}); err != nil {
		t.Fatal(err)
	}
	cfg, err := Load(cf, func(k string) string { return map[string]string{"HOME": t.TempDir()}[k] })
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Model.V != "qwen2.5-coder:14b" || cfg.BaseURL.V != "http://127.0.0.1:11434/v1" || cfg.ContextWindow.V != 32768 {
		t.Errorf("example resolves to model %q at %q, window %d", cfg.Model.V, cfg.BaseURL.V, cfg.ContextWindow.V)
	}
}

// walkUnset lists nil pointers and empty maps/slices (first elements only).
func walkUnset(v reflect.Value, path string, out *[]string) {
	switch v.Kind() {
	case reflect.Pointer:
		if v.IsNil() {
			*out = append(*out, path)
		}
	case reflect.Struct:
		for i := 0; i < v.NumField(); i++ {
			tag := strings.Split(v.Type().Field(i).Tag.Get("toml"), ",")[0]
			p := tag
			if path != "" {
				p = path + "." + tag
			}
			walkUnset(v.Field(i), p, out)
		}
	case reflect.Map:
		if v.Len() == 0 {
			*out = append(*out, path)
		}
		if v.Type().Elem().Kind() == reflect.Struct {
			// At least one entry must set each field.
			fields := map[string]bool{}
			for _, k := range v.MapKeys() {
				var m []string
				walkUnset(v.MapIndex(k), path+".NAME", &m)
				for _, f := range m {
					fields[f] = true
				}
			}
			for f := range fields {
				if !setInAny(v, f, path) {
					*out = append(*out, f)
				}
			}
		}
	case reflect.Slice:
		if v.Len() == 0 {
			*out = append(*out, path)
			return
		}
		// Union over entries: a key counts as shown if any entry sets it.
		counts := map[string]int{}
		for i := 0; i < v.Len(); i++ {
			var m []string
			walkUnset(v.Index(i), path+"[]", &m)
			for _, f := range m {
				counts[f]++
			}
		}
		for f, n := range counts {
			if n == v.Len() {
				*out = append(*out, f)
			}
		}
	}
}

func setInAny(m reflect.Value, field, path string) bool {
	for _, k := range m.MapKeys() {
		var missing []string
		walkUnset(m.MapIndex(k), path+".NAME", &missing)
		found := false
		for _, f := range missing {
			if f == field {
				found = true
			}
		}
		if !found {
			return true
		}
	}
	return false
}

// TestConfigFileErrors checks that every kind of mistake names the line and
// the key.
func TestConfigFileErrors(t *testing.T) {
	cases := []struct {
		name, doc string
		line      int
		key, msg  string
	}{
		{"unknown top-level key", "modle = \"x\"\n", 1, "modle", "unknown key"},
		{"unknown nested key", "[log]\nlevel = \"info\"\nfiel = \"x\"\n", 3, "log.fiel", "unknown key"},
		{"unknown key in second model", "[[models]]\nname = \"a\"\n[[models]]\nname = \"b\"\nwindow = 3\n", 5, "models[1].window", "unknown key"},
		{"wrong type", "max_model_calls = \"ten\"\n", 1, "max_model_calls", "expected an integer"},
		{"wrong type bool", "[[models]]\nname = \"a\"\nimages = \"yes\"\n", 3, "models[0].images", "expected true or false"},
		{"syntax", "model = \"a\n", 1, "", "in \"model = \\\"a\""},
		{"model without name", "[[models]]\ncontext_window = 8192\n", 1, "models[0]", "needs name"},
		{"duplicate model", "[[models]]\nname = \"a\"\n[[models]]\nname = \"a\"\n", 4, "models[1].name", "already defined at line 2"},
		{"reserve over window", "[[models]]\nname = \"a\"\ncontext_window = 4096\noutput_reserve = 4096\n", 4, "models[0].output_reserve", "smaller than context_window"},
		{"small window", "[[models]]\nname = \"a\"\ncontext_window = 100\n", 3, "models[0].context_window", "too small"},
		{"tokenizer", "[[models]]\nname = \"a\"\ntokenizer = \"gpt2\"\n", 3, "models[0].tokenizer", "unknown encoding"},
		{"reasoning_history", "[[models]]\nname = \"a\"\nreasoning_history = \"always\"\n", 3, "models[0].reasoning_history", "use auto, strip, echo or require"},
		{"tool_call_ids", "[[models]]\nname = \"a\"\ntool_call_ids = \"short\"\n", 3, "models[0].tool_call_ids", "use auto, as-is or mistral"},
		{"inline_think", "[[models]]\nname = \"a\"\ninline_think = \"always\"\n", 3, "models[0].inline_think", "use auto, tag or open"},
		{"edit_tool", "[[models]]\nname = \"a\"\nedit_tool = \"patch\"\n", 3, "models[0].edit_tool", "use edit_file or apply_patch"},
		{"negative price", "[[models]]\nname = \"a\"\ninput_price = -1.0\n", 3, "models[0].input_price", "negative"},
		{"api key in api_key_env", "[providers.x]\napi_key_env = \"sk-abc123\"\n", 2, "providers.x.api_key_env", "not an environment variable name"},
		{"bad base url", "[providers.x]\nbase_url = \"localhost:11434\"\n", 2, "providers.x.base_url", "http://"},
		{"two providers, no default", "[providers.a]\n[providers.b]\n", 0, "providers", "set provider"},
		{"unknown default provider", "provider = \"c\"\n[providers.a]\n", 1, "provider", "no [providers.c]"},
		{"log level", "[log]\nlevel = \"loud\"\n", 2, "log.level", "invalid log level"},
		{"threshold", "[compaction]\nthreshold = 0\n", 2, "compaction.threshold", "out of range"},
		{"mode", "[permissions]\nmode = \"yolo\"\n", 2, "permissions.mode", "unknown mode"},
		{"empty db path", "[database]\npath = \"\"\n", 2, "database.path", "must not be empty"},
		{"top-level key in a table", "[log]\nlevel = \"info\"\ntools = \"off\"\n", 3, "log.tools", "tools is a top-level key"},
		{"tools type", "tools = false\n", 1, "tools", "expected a string"},
		{"tools value", "model = \"a\"\ntools = \"no\"\n", 2, "tools", "use on or off"},
		{"command timeout", "command_timeout = \"2 minutes\"\n", 1, "command_timeout", "not a duration"},
		{"negative tool output limit", "tool_output_limit = -8192\n", 1, "tool_output_limit", "too small"},
		{"session titles", "session_titles = \"ai\"\n", 1, "session_titles", "use local or model"},
		{"list page size", "list_page_size = 501\n", 1, "list_page_size", "1 to 500"},
		{"lease ttl", "lease_ttl = \"soon\"\n", 1, "lease_ttl", "not a duration"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := parseConfigFile("cfg.toml", []byte(c.doc))
			var fe *fileError
			if !errors.As(err, &fe) {
				t.Fatalf("got %v, want a fileError", err)
			}
			if fe.Line != c.line || fe.Key != c.key || !strings.Contains(fe.Msg, c.msg) {
				t.Errorf("got line %d key %q msg %q; want line %d key %q msg containing %q", fe.Line, fe.Key, fe.Msg, c.line, c.key, c.msg)
			}
			if !strings.HasPrefix(err.Error(), "cfg.toml:") {
				t.Errorf("error %q does not start with the file name", err)
			}
		})
	}
}

// TestConfigPrecedence checks flags > environment > file > defaults for
// each layer, setting by setting.
func TestConfigPrecedence(t *testing.T) {
	dir := t.TempDir()
	file := dir + "/c.toml"
	doc := `model = "file-model"
[providers.p]
base_url = "http://file.example/v1"
api_key_env = "P_KEY"
[database]
path = "/file/db"
[log]
level = "warn"
`
	if err := os.WriteFile(file, []byte(doc), 0o600); err != nil {
		t.Fatal(err)
	}
	load := func(args []string, env map[string]string) *Settings {
		t.Helper()
		fs := flag.NewFlagSet("t", flag.ContinueOnError)
		cf := AddFlags(fs, FlagsAll)
		if err := fs.Parse(args); err != nil {
			t.Fatal(err)
		}
		cfg, err := Load(cf, func(k string) string { return env[k] })
		if err != nil {
			t.Fatal(err)
		}
		return cfg
	}
	type got struct{ model, base, db, level, key string }
	pick := func(c *Settings) got { return got{c.Model.V, c.BaseURL.V, c.DB.V, c.LogLevel.V, c.APIKey.V} }

	noFile := load(nil, map[string]string{"HOME": "/h"})
	if g, w := pick(noFile), (got{defaultModel, "https://api.openai.com/v1", "/h/.local/share/crow-acp/crow.db", "info", ""}); g != w {
		t.Errorf("defaults: got %+v, want %+v", g, w)
	}
	fileOnly := load([]string{"--config", file}, map[string]string{"P_KEY": "k1", "OPENAI_API_KEY": "not-this"})
	if g, w := pick(fileOnly), (got{"file-model", "http://file.example/v1", "/file/db", "warn", "k1"}); g != w {
		t.Errorf("file: got %+v, want %+v", g, w)
	}
	envVars := map[string]string{"CROW_CONFIG": file, "CROW_MODEL": "env-model", "OPENAI_BASE_URL": "http://env.example/v1",
		"CROW_DB": "/env/db", "CROW_LOG_LEVEL": "error", "P_KEY": "k2"}
	env := load(nil, envVars)
	if g, w := pick(env), (got{"env-model", "http://env.example/v1", "/env/db", "error", "k2"}); g != w {
		t.Errorf("env over file: got %+v, want %+v", g, w)
	}
	flags := load([]string{"--model", "flag-model", "--base-url", "http://flag.example/v1", "--db", "/flag/db", "--log-level", "debug"}, envVars)
	if g, w := pick(flags), (got{"flag-model", "http://flag.example/v1", "/flag/db", "debug", "k2"}); g != w {
		t.Errorf("flags over env: got %+v, want %+v", g, w)
	}
	if flags.Model.From.String() != "flag --model" || env.Model.From.String() != "env CROW_MODEL" ||
		fileOnly.Model.From.String() != "file "+file+":1" || noFile.Model.From.String() != "default" {
		t.Errorf("sources: %s / %s / %s / %s", flags.Model.From, env.Model.From, fileOnly.Model.From, noFile.Model.From)
	}
}
