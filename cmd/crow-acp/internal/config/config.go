// Package config resolves crow-acp's configuration: command-line flags over
// environment variables over the file ($XDG_CONFIG_HOME/crow-acp/config.toml)
// over built-in defaults, each value with the place it came from. Load
// returns Settings, which build what the rest of the program needs: the
// agent's configuration, the model client, the session database's DSN.
// The command line (cmd/crow-acp) parses flags, wires and prints; the rules
// live here.
package config

import (
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"

	"github.com/crow-acp/crow-acp/internal/agent"
	"github.com/crow-acp/crow-acp/internal/agent/request"
	"github.com/crow-acp/crow-acp/internal/persistence/backend"
	"github.com/crow-acp/crow-acp/internal/provider"
)

// defaultPermissionMode is the mode new sessions start in.
const defaultPermissionMode = "default"

// LoadStore resolves only what a command that reads the session store
// needs (the configuration file, the database, and the mode new sessions
// start in, which sessions import gives), so that such a command
// (sessions list/show/export, a chat's history) does not fail on a setting
// it never uses, such as an OPENAI_BASE_URL that is not a URL. Every error
// is an *Error.
func LoadStore(cf *Flags, getenv func(string) string) (*Settings, error) {
	cfg, _, fc, fileAt, err := loadFile(cf, getenv)
	if err != nil {
		return nil, err
	}
	r := resolver{cf: cf, getenv: getenv, fileAt: fileAt}
	cfg.resolveDB(r, fc)
	if err := cfg.validateDB(); err != nil {
		return nil, err
	}
	cfg.permissionMode = r.str("", "", fc.Permission.Mode, "permissions.mode", defaultPermissionMode)
	return cfg, nil
}

// loadFile finds and reads the configuration file (flag, CROW_CONFIG, or
// the default path, which may be missing).
func loadFile(cf *Flags, getenv func(string) string) (*Settings, *loadedFile, fileConfig, func(key string) Source, error) {
	cfg := &Settings{}

	// The file comes first: it is the lowest layer above the defaults.
	switch {
	case cf.set("config"):
		cfg.File = cf.config
	case getenv("CROW_CONFIG") != "":
		cfg.File = getenv("CROW_CONFIG")
	default:
		cfg.File = defaultConfigPath(getenv)
	}
	var lf *loadedFile
	if cfg.File != "" {
		var err error
		lf, err = readConfigFile(cfg.File)
		switch {
		case err == nil:
			cfg.FileFound = true
		case errors.Is(err, fs.ErrNotExist):
			if cf.set("config") || getenv("CROW_CONFIG") != "" {
				return nil, nil, fileConfig{}, nil, Usagef("configuration file %s does not exist", cfg.File)
			}
			lf = nil // the default path is optional
		default:
			var fe *fileError
			if errors.As(err, &fe) {
				return nil, nil, fileConfig{}, nil, &Error{"invalid configuration file " + err.Error()}
			}
			return nil, nil, fileConfig{}, nil, Usagef("configuration file: %v", err)
		}
	}
	var fc fileConfig
	if lf != nil {
		fc = lf.cfg
	}
	fileAt := func(key string) Source {
		line := lf.line(key)
		if line > 0 {
			return Source{Kind: "file", Detail: fmt.Sprintf("%s:%d", lf.Path, line)}
		}
		return Source{Kind: "file", Detail: lf.Path}
	}

	return cfg, lf, fc, fileAt, nil
}

// Load resolves the configuration: cf are the flags of the command line
// (after their flag set was parsed; nil for none) and getenv reads the
// environment. Every error is an *Error.
func Load(cf *Flags, getenv func(string) string) (*Settings, error) {
	cfg, lf, fc, fileAt, err := loadFile(cf, getenv)
	if err != nil {
		return nil, err
	}

	r := resolver{cf: cf, getenv: getenv, fileAt: fileAt}
	cfg.Model = r.str("model", "CROW_MODEL", fc.Model, "model", defaultModel)

	defaultProvider := deref(fc.Provider, "")
	if defaultProvider == "" && len(fc.Providers) == 1 {
		defaultProvider = sortedKeys(fc.Providers)[0]
	}
	for i, m := range fc.Models {
		spec := ModelSpec{Name: *m.Name, Line: lf.line(fmt.Sprintf("models[%d]", i))}
		spec.Provider = deref(m.Provider, defaultProvider)
		spec.ContextWindow = deref(m.ContextWindow, 0)
		spec.OutputReserve = deref(m.OutputReserve, 0)
		spec.Tokenizer = deref(m.Tokenizer, "")
		spec.Images, spec.ImagesSet = deref(m.Images, false), m.Images != nil
		spec.InputPrice = deref(m.InputPrice, 0)
		spec.OutputPrice = deref(m.OutputPrice, 0)
		spec.CachedInputPrice = deref(m.CachedInputPrice, 0)
		spec.PricesSet = m.InputPrice != nil || m.OutputPrice != nil || m.CachedInputPrice != nil
		spec.Title = deref(m.Title, "")
		spec.Currency = deref(m.Currency, "")
		spec.ReasoningHistory = deref(m.ReasoningHistory, "")
		spec.ToolCallIDs = deref(m.ToolCallIDs, "")
		spec.InlineThink = deref(m.InlineThink, "")
		spec.SystemPrompt = deref(m.SystemPrompt, "")
		spec.SystemPromptAppend = deref(m.SystemPromptAppend, "")
		spec.EditTool = deref(m.EditTool, "")
		cfg.Models = append(cfg.Models, spec)
	}
	// CROW_MODELS (see request.ParseModels) replaces the file's list.
	if spec := getenv("CROW_MODELS"); spec != "" {
		list, err := request.ParseModels(spec)
		if err != nil {
			return nil, Usagef("invalid models list (env CROW_MODELS): %v", err)
		}
		cfg.Models = nil
		for _, m := range list {
			cfg.Models = append(cfg.Models, ModelSpec{Name: m.Name, Title: m.Title, ContextWindow: m.ContextWindow,
				OutputReserve: m.OutputReserve, Images: deref(m.ImagesConfigured, false), ImagesSet: m.ImagesConfigured != nil, InputPrice: m.InputPrice, OutputPrice: m.OutputPrice,
				CachedInputPrice: m.CachedInputPrice, PricesSet: m.PricesSet, Currency: m.Currency, Tokenizer: m.Tokenizer,
				ReasoningHistory: string(m.ReasoningHistory), ToolCallIDs: string(m.ToolCallIDs), InlineThink: string(m.InlineThink), EditTool: m.EditTool})
		}
		cfg.ModelsFrom = Source{Kind: "env", Detail: "CROW_MODELS"}
		fc.Models = nil // the file's per-model settings no longer apply
	} else if len(cfg.Models) > 0 {
		cfg.ModelsFrom = Source{Kind: "file", Detail: cfg.File}
	}
	// Without an explicit model, new sessions use the first listed one.
	if cfg.Model.From.Kind == "default" && len(cfg.Models) > 0 {
		cfg.Model = Value[string]{V: cfg.Models[0].Name, From: Source{Kind: "default", Detail: "first of the models list"}}
	}
	for i := range cfg.Models {
		if cfg.Models[i].Name == cfg.Model.V {
			cfg.Selected = &cfg.Models[i]
		}
	}

	var spec modelFile
	specKey := ""
	if i := cfg.modelIndex(); i >= 0 && i < len(fc.Models) {
		spec, specKey = fc.Models[i], fmt.Sprintf("models[%d]", i)
	}
	if cfg.ContextWindow, err = r.int("", "CROW_CONTEXT_WINDOW", spec.ContextWindow, specKey+".context_window", 0); err != nil {
		return nil, err
	}
	if cfg.outputReserve, err = r.int("", "CROW_OUTPUT_RESERVE", spec.OutputReserve, specKey+".output_reserve", 0); err != nil {
		return nil, err
	}
	if w, o := cfg.ContextWindow.V, cfg.outputReserve.V; o < 0 || (w > 0 && o >= w) {
		return nil, Usagef("output reserve %d must be at least 0 and smaller than the context window %d (from %s)", o, w, cfg.outputReserve.From)
	}

	// The provider: the selected model's, else the file's default, else the
	// only one defined.
	cfg.Provider = Value[string]{From: fromDefault}
	switch {
	case cfg.Selected != nil && spec.Provider != nil:
		cfg.Provider = Value[string]{V: *spec.Provider, From: fileAt(specKey + ".provider")}
	case fc.Provider != nil:
		cfg.Provider = Value[string]{V: *fc.Provider, From: fileAt("provider")}
	case len(fc.Providers) == 1:
		for name := range fc.Providers {
			cfg.Provider = Value[string]{V: name, From: fileAt("providers." + name)}
		}
	}
	var prov providerFile
	pkey := "providers." + cfg.Provider.V
	if cfg.Provider.V != "" {
		prov = fc.Providers[cfg.Provider.V]
	}
	cfg.BaseURL = r.str("base-url", "OPENAI_BASE_URL", prov.BaseURL, pkey+".base_url", provider.DefaultBaseURL)
	cfg.APIKeyEnv = r.str("", "", prov.APIKeyEnv, pkey+".api_key_env", defaultAPIKeyEnv)
	cfg.Credentials = credentialsPath(getenv)
	if cfg.APIKey, err = resolveKey(getenv, cfg.APIKeyEnv.V, cfg.Credentials); err != nil {
		return nil, err
	}
	cfg.Headers = Value[map[string]string]{V: prov.Headers, From: fromDefault}
	if len(prov.Headers) > 0 {
		cfg.Headers.From = fileAt(pkey + ".headers")
	}
	if err := cfg.resolveProviders(fc, getenv); err != nil {
		return nil, err
	}

	cfg.resolveDB(r, fc)
	cfg.resolveEnvPolicy(fc, fileAt)
	cfg.LogFile = r.str("log-file", "CROW_LOG_FILE", fc.Log.File, "log.file", "")
	cfg.LogFile.V = ExpandHome(cfg.LogFile.V, getenv)
	cfg.LogLevel = r.str("log-level", "CROW_LOG_LEVEL", fc.Log.Level, "log.level", defaultLogLevel)

	if cfg.maxModelCalls, err = r.int("", "CROW_MAX_MODEL_CALLS", fc.MaxModelCalls, "max_model_calls", request.DefaultMaxModelCalls); err != nil {
		return nil, err
	}
	if err := cfg.resolveCompaction(r, fc.Compaction); err != nil {
		return nil, err
	}
	cfg.permissionMode = r.str("", "", fc.Permission.Mode, "permissions.mode", defaultPermissionMode)
	if err := cfg.resolveToolsAndSessions(r, fc); err != nil {
		return nil, err
	}
	cfg.resolvePrompt(r, fc)
	if cfg.limits, err = loadLimits(r, fc.Limits, fc.Requests); err != nil {
		return nil, err
	}
	// The line holds a prompt within the limits: its images in base64
	// and its text, no more (imagecheck.LineBytes).
	if cfg.MaxLineBytes, err = r.int("max-line-bytes", "", nil, "", cfg.limits.lineBytesDefault()); err != nil {
		return nil, err
	}
	if cfg.MaxLineBytes.From.Kind == "default" {
		cfg.MaxLineBytes.From.Detail = "from the prompt limits"
	}
	if cfg.mcp, err = loadMCP(r, fc.MCP); err != nil {
		return nil, err
	}

	if err := cfg.validate(); err != nil {
		return nil, err
	}
	return cfg, nil
}

func (c *Settings) modelIndex() int {
	for i := range c.Models {
		if &c.Models[i] == c.Selected {
			return i
		}
	}
	return -1
}

// validate checks the values that flags and the environment can set (the
// file's own values were checked with their line numbers already).
func (c *Settings) validate() error {
	if err := checkLogLevel(c.LogLevel.V); err != nil {
		return Usagef("%s (from %s)", err, c.LogLevel.From)
	}
	if c.MaxLineBytes.V < 1024 {
		return Usagef("max-line-bytes %d is too small: at least 1024 (from %s)", c.MaxLineBytes.V, c.MaxLineBytes.From)
	}
	if err := c.validateToolsAndSessions(); err != nil {
		return err
	}
	if c.maxModelCalls.V < 1 {
		return Usagef("max model calls %d: must be at least 1 (from %s)", c.maxModelCalls.V, c.maxModelCalls.From)
	}
	if err := checkBaseURL(c.BaseURL.V); err != nil {
		return Usagef("%v (from %s)", err, c.BaseURL.From)
	}
	if c.ContextWindow.V != 0 && c.ContextWindow.V < 1024 {
		return Usagef("context window %d is too small: at least 1024 tokens (from %s)", c.ContextWindow.V, c.ContextWindow.From)
	}
	if err := c.limits.validate(); err != nil {
		return err
	}
	if err := c.mcp.validate(); err != nil {
		return err
	}
	if err := c.validateDB(); err != nil {
		return err
	}
	if c.Model.V == "" {
		return Usagef("no model: set CROW_MODEL, --model or model in the configuration file")
	}
	return nil
}

func (c *Settings) resolveDB(r resolver, fc fileConfig) {
	c.DB = r.str("db", "CROW_DB", fc.Database.Path, "database.path", defaultDBPath(r.getenv))
	c.DB.V = ExpandHome(c.DB.V, r.getenv)
}

func (c *Settings) validateDB() error {
	if c.DB.V == "" {
		return Usagef("no database path: set CROW_DB, --db or database.path (there is no home directory to default to)")
	}
	if _, err := backend.Parse(c.DB.V); err != nil {
		return Usagef("database: %v (from %s)", err, c.DB.From)
	}
	return nil
}

// Agent is what the agent gets from the configuration; version is the
// program's, which the agent reports in initialize.
func (c *Settings) Agent(version string) agent.Config {
	models := make([]request.Model, 0, len(c.Models))
	for _, m := range c.Models {
		am := request.Model{Name: m.Name, Title: m.Title, ContextWindow: m.ContextWindow, OutputReserve: m.OutputReserve,
			ImagesConfigured: m.imagesFlag(), InputPrice: m.InputPrice, OutputPrice: m.OutputPrice, Currency: m.Currency,
			CachedInputPrice: m.CachedInputPrice, PricesSet: m.PricesSet,
			Tokenizer: m.Tokenizer, Provider: c.modelProvider(m),
			SystemPrompt: m.SystemPrompt, SystemPromptAppend: m.SystemPromptAppend}
		// Validated when read (file.go, request.ParseModels).
		am.ReasoningHistory, _ = provider.ParseReasoningHistory(m.ReasoningHistory)
		am.ToolCallIDs, _ = provider.ParseToolCallIDStyle(m.ToolCallIDs)
		am.InlineThink, _ = provider.ParseInlineThink(m.InlineThink)
		am.EditTool = m.EditTool
		if m.Name == c.Model.V {
			// CROW_CONTEXT_WINDOW and the resolved reserve apply to the
			// selected model.
			if c.ContextWindow.V > 0 {
				am.ContextWindow = c.ContextWindow.V
			}
			if c.outputReserve.V > 0 {
				am.OutputReserve = c.outputReserve.V
			}
		}
		models = append(models, am)
	}
	if c.Selected == nil && (c.ContextWindow.V > 0 || c.outputReserve.V > 0) {
		models = append(models, request.Model{Name: c.Model.V, ContextWindow: c.ContextWindow.V, OutputReserve: c.outputReserve.V})
	}
	ac := agent.Config{
		Models:        models,
		Model:         c.Model.V,
		Version:       version,
		MaxModelCalls: explicit(c.maxModelCalls),
		ListPageSize:  c.listPageSize.V,
		ModelTitles:   c.titles.V == "model",
		PromptUsage:   c.promptUsage.V == "on",

		SystemPrompt:       c.systemPrompt.V,
		SystemPromptAppend: c.systemPromptAppend.V,
		Providers:          c.agentProviders(),
		Compaction:         c.compactionSettings(),
		LeaseTTL:           c.leaseTTL.V,

		NoTools:         c.tools.V == "off",
		DefaultMode:     c.DefaultMode(),
		CommandTimeout:  c.commandTimeout.V,
		ToolOutputLimit: explicit(c.toolOutputLimit),
		Auth:            c.auth(),
	}
	c.limits.apply(&ac)
	ac.ProtectedFiles = c.ownFiles()
	ac.Secrets = c.knownSecrets()
	ac.ChildEnv = c.childEnv()
	ac.TrustedMCPServers = c.mcp.trusted.V
	ac.MCPCallTimeout = c.mcp.callTimeout.V
	return ac
}

// explicit is a limit the user set, or 0 where the agent scales it to the
// model's window.
func explicit(v Value[int]) int {
	if v.From.Kind == "default" {
		return 0
	}
	return v.V
}

// ownFiles are crow-acp's configuration file, credentials file, SQLite
// database and log file, which tools never read or write without asking.
func (c *Settings) ownFiles() []string {
	var out []string
	for _, f := range []string{c.File, c.Credentials, c.DB.V, c.LogFile.V} {
		if f == "" {
			continue
		}
		if f == c.DB.V {
			if k, err := backend.Parse(f); err != nil || k != backend.SQLite {
				continue
			}
		}
		if abs, err := filepath.Abs(f); err == nil {
			out = append(out, abs)
		}
	}
	return out
}
