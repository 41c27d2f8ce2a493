package config

import (
	"fmt"
	"sort"
	"strings"
)

// fileConfig is the schema of config.toml. Every field is a pointer or a
// slice so that "absent" differs from "zero": an absent key leaves the
// default (or the environment) in charge. config.example.toml documents it.
type fileConfig struct {
	Model         *string `toml:"model"`    // default model name
	Provider      *string `toml:"provider"` // default provider name
	MaxModelCalls *int    `toml:"max_model_calls"`

	// Tools and sessions. There is no [tools] or [sessions] table: these
	// are top-level, like max_model_calls; their CROW_* variables win.
	Tools           *string `toml:"tools"`             // CROW_TOOLS: "on" or "off"
	CommandTimeout  *string `toml:"command_timeout"`   // CROW_COMMAND_TIMEOUT: a Go duration
	ToolOutputLimit *int    `toml:"tool_output_limit"` // CROW_TOOL_OUTPUT_LIMIT: bytes
	SessionTitles   *string `toml:"session_titles"`    // CROW_TITLES: "local" or "model"
	ListPageSize    *int    `toml:"list_page_size"`    // CROW_LIST_PAGE_SIZE
	LeaseTTL        *string `toml:"lease_ttl"`         // CROW_LEASE_TTL: a Go duration
	PromptUsage     *string `toml:"prompt_usage"`      // CROW_PROMPT_USAGE: "on" or "off"

	// The system prompt (config_prompt.go).
	SystemPrompt       *string `toml:"system_prompt"`        // CROW_SYSTEM_PROMPT: replaces the built-in one
	SystemPromptAppend *string `toml:"system_prompt_append"` // CROW_SYSTEM_PROMPT_APPEND: added to it

	Providers  map[string]providerFile `toml:"providers"`
	Models     []modelFile             `toml:"models"`
	Database   databaseFile            `toml:"database"`
	Log        logFile                 `toml:"log"`
	Compaction compactionFile          `toml:"compaction"`
	Permission permissionFile          `toml:"permissions"`
	Limits     limitsFile              `toml:"limits"`
	Requests   requestsFile            `toml:"requests"`
	EnvPolicy  envPolicyFile           `toml:"shell_environment_policy"`
	MCP        mcpFile                 `toml:"mcp"`
}

type providerFile struct {
	BaseURL   *string           `toml:"base_url"`
	API       *string           `toml:"api"` // "chat" (chat completions, the default) or "responses" (OpenAI's Responses API)
	APIKeyEnv *string           `toml:"api_key_env"`
	Headers   map[string]string `toml:"headers"`
}

type modelFile struct {
	Name             *string  `toml:"name"`
	Title            *string  `toml:"title"`
	Provider         *string  `toml:"provider"`
	ContextWindow    *int     `toml:"context_window"`
	OutputReserve    *int     `toml:"output_reserve"`
	Tokenizer        *string  `toml:"tokenizer"`
	Images           *bool    `toml:"images"`
	InputPrice       *float64 `toml:"input_price"`
	OutputPrice      *float64 `toml:"output_price"`
	CachedInputPrice *float64 `toml:"cached_input_price"`
	Currency         *string  `toml:"currency"`
	ReasoningHistory *string  `toml:"reasoning_history"`
	ToolCallIDs      *string  `toml:"tool_call_ids"`
	InlineThink      *string  `toml:"inline_think"`
	// SystemPrompt replaces, SystemPromptAppend extends the system prompt
	// for this model.
	SystemPrompt       *string `toml:"system_prompt"`
	SystemPromptAppend *string `toml:"system_prompt_append"`
	EditTool           *string `toml:"edit_tool"`
}

type databaseFile struct {
	Path *string `toml:"path"`
}

type logFile struct {
	File  *string `toml:"file"`
	Level *string `toml:"level"`
}

type compactionFile struct {
	Auto               *bool    `toml:"auto"`
	Threshold          *float64 `toml:"threshold"`
	Target             *float64 `toml:"target"`
	KeepRecent         *int     `toml:"keep_recent"`
	KeepTurns          *int     `toml:"keep_turns"`
	PruneProtectTurns  *int     `toml:"prune_protect_turns"`
	PruneProtectTokens *int     `toml:"prune_protect_tokens"`
	PruneMinimum       *int     `toml:"prune_minimum"`
	ProtectedTools     []string `toml:"protected_tools"`
}

type permissionFile struct {
	Mode *string `toml:"mode"`
}

// limitsFile is the [limits] table: caps that keep one client or one model
// from exhausting the process.
type limitsFile struct {
	PromptBytes *int `toml:"prompt_bytes"`
	// Images have their own limits, apart from the text's prompt_bytes.
	ImageBytes       *int `toml:"image_bytes"`        // one image, decoded
	PromptImageBytes *int `toml:"prompt_image_bytes"` // all images of one prompt, decoded
	ActiveSessions   *int `toml:"active_sessions"`
	ReplyBytes       *int `toml:"reply_bytes"`     // text and reasoning of one model reply
	ArgumentBytes    *int `toml:"arguments_bytes"` // one tool call's arguments
	EventBytes       *int `toml:"event_bytes"`     // one server-sent event of the model stream
	// Subagents: the task tool's children (agent/subagent.go).
	Subagents      *int `toml:"subagents"`          // running at once; 0 turns the tool off
	SubagentSteps  *int `toml:"subagent_steps"`     // model requests of one child
	SubagentTokens *int `toml:"subagent_tokens"`    // tokens of one child
	SubagentsTurn  *int `toml:"subagents_per_turn"` // children one turn may start
}

// requestsFile is the [requests] table: how model requests are retried and
// when a silent endpoint is given up on.
type requestsFile struct {
	Retries     *int    `toml:"retries"`
	RetryDelay  *string `toml:"retry_delay"`
	IdleTimeout *string `toml:"idle_timeout"`
	Timeout     *string `toml:"timeout"` // the whole of one model request
}

// mcpFile is the [mcp] table.
type mcpFile struct {
	// IdleTimeout stops a stdio MCP server unused this long; the next call
	// of one of its tools starts it again. Env CROW_MCP_IDLE_TIMEOUT.
	IdleTimeout *string `toml:"idle_timeout"`
	// MaxServers caps the stdio MCP servers running at once in one
	// crow-acp process. Env CROW_MCP_MAX_SERVERS.
	MaxServers *int `toml:"max_servers"`
	// TrustedServers are MCP servers (by the name the client gives them)
	// whose tool annotations are believed: their readOnlyHint tools run
	// without asking, like reads. Env CROW_MCP_TRUSTED (comma-separated).
	TrustedServers []string `toml:"trusted_servers"`
	// CallTimeout bounds one MCP tool call. Env CROW_MCP_CALL_TIMEOUT.
	CallTimeout *string `toml:"call_timeout"`
}

// envPolicyFile is [shell_environment_policy]: the environment of commands
// the model runs and of MCP stdio servers (named after codex's table of the
// same purpose).
type envPolicyFile struct {
	Inherit     *string           `toml:"inherit"`      // "all" (default), "core" or "none"
	Exclude     []string          `toml:"exclude"`      // extra name patterns to drop
	IncludeOnly []string          `toml:"include_only"` // keep only these name patterns
	Set         map[string]string `toml:"set"`          // variables to add or replace
}

// fileError is an invalid configuration file: it names the file, the line
// and the key.
type fileError struct {
	Path string
	Line int    // 0: unknown
	Key  string // dotted, "" when the error is not about one key
	Msg  string
}

func (e *fileError) Error() string {
	var b strings.Builder
	b.WriteString(e.Path)
	if e.Line > 0 {
		fmt.Fprintf(&b, ":%d", e.Line)
	}
	b.WriteString(": ")
	if e.Key != "" {
		fmt.Fprintf(&b, "%s: ", e.Key)
	}
	b.WriteString(e.Msg)
	return b.String()
}

// loadedFile is a parsed configuration file and where each key sits.
type loadedFile struct {
	Path  string
	cfg   fileConfig
	lines map[string]int // dotted key ("models[1].name") -> line
}

// line returns where key was written, 0 if unknown.
func (f *loadedFile) line(key string) int {
	if f == nil {
		return 0
	}
	return f.lines[key]
}

// errorAt builds a fileError for key.
func (f *loadedFile) errorAt(key, format string, args ...any) error {
	return &fileError{Path: f.Path, Line: f.line(key), Key: key, Msg: fmt.Sprintf(format, args...)}
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
