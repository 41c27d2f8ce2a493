package config

import (
	"time"

	"github.com/crow-acp/crow-acp/internal/agent"
	"github.com/crow-acp/crow-acp/internal/agent/tool"
	"github.com/crow-acp/crow-acp/internal/imagecheck"
)

// Defaults that belong to the command. Defaults of the agent, the model
// client and the wire live in their packages and are referenced, not copied.
const (
	defaultModel     = "gpt-4o-mini"
	defaultAPIKeyEnv = "OPENAI_API_KEY"
	defaultLogLevel  = "info"
)

// Settings is the effective configuration: flags > environment > file >
// defaults. What the command line prints or checks is exported; the rest
// reaches the agent through Agent.
type Settings struct {
	File      string // configuration file path; "" when there is none
	FileFound bool   // the file exists and was read

	Model       Value[string]
	Provider    Value[string] // provider name from the file; "" = built-in
	BaseURL     Value[string]
	APIKeyEnv   Value[string]
	APIKey      Value[string] // secret: never printed, never logged
	Credentials string        // the file `crow-acp login` writes keys to; "" = none
	Headers     Value[map[string]string]
	providers   map[string]providerSpec // every [providers.NAME], for models on other endpoints
	DB          Value[string]           // a SQLite path or a postgres:// URL (backend.Open)
	LogFile     Value[string]
	LogLevel    Value[string]
	// MaxLineBytes is the largest JSON-RPC message accepted on stdin.
	MaxLineBytes  Value[int]
	maxModelCalls Value[int]

	// Models are the [[models]] entries of the file, or of CROW_MODELS,
	// by name; Selected is the entry of the selected model, nil if it has
	// none.
	Models     []ModelSpec
	ModelsFrom Source
	Selected   *ModelSpec

	listPageSize Value[int]           // sessions per session/list page
	titles       Value[string]        // "local" or "model" (file key session_titles)
	promptUsage  Value[string]        // "on" or "off" (file key prompt_usage)
	leaseTTL     Value[time.Duration] // a session's lock outlives its holder's last heartbeat by this

	toolOutputLimit Value[int]           // bytes of one tool result the model sees
	commandTimeout  Value[time.Duration] // run_command's default timeout
	tools           Value[string]        // "on", or "off": no tools for the model

	ContextWindow Value[int] // tokens; 0: not configured
	outputReserve Value[int] // tokens; 0: not configured

	compact        compactionConfig
	permissionMode Value[string]

	systemPrompt       Value[string] // replaces the built-in system prompt; "" = built-in
	systemPromptAppend Value[string] // added to it

	limits limitsConfig // [limits] and [requests]
	mcp    mcpConfig    // [mcp]

	envPolicy     tool.EnvPolicy // [shell_environment_policy] and the secrets it always drops
	envPolicyFrom Source
}

// ModelSpec is what the configuration says about one model.
type ModelSpec struct {
	Name          string `json:"name"`
	Provider      string `json:"provider,omitempty"`
	ContextWindow int    `json:"contextWindow,omitempty"` // 0: not configured
	OutputReserve int    `json:"outputReserve,omitempty"` // 0: not configured
	Tokenizer     string `json:"tokenizer,omitempty"`
	Images        bool   `json:"images"`
	// ImagesSet: the images flag was configured (true or false), which
	// wins over the endpoint and the model's family (ResolveImages);
	// unset, Images is false and says nothing.
	ImagesSet        bool    `json:"imagesSet,omitempty"`
	InputPrice       float64 `json:"inputPrice,omitempty"` // USD per million tokens; 0: unknown
	OutputPrice      float64 `json:"outputPrice,omitempty"`
	CachedInputPrice float64 `json:"cachedInputPrice,omitempty"`
	PricesSet        bool    `json:"pricesSet,omitempty"`        // prices were configured: the built-in ones do not apply
	Title            string  `json:"title,omitempty"`            // display name in model pickers
	Currency         string  `json:"currency,omitempty"`         // of the prices; "" = USD
	ReasoningHistory string  `json:"reasoningHistory,omitempty"` // "" = by the model's name
	ToolCallIDs      string  `json:"toolCallIds,omitempty"`      // "" = by the model's name
	InlineThink      string  `json:"inlineThink,omitempty"`      // "" = by the model's name
	// SystemPrompt replaces the system prompt for this model;
	// SystemPromptAppend adds to it ("" = none).
	SystemPrompt       string `json:"systemPrompt,omitempty"`
	SystemPromptAppend string `json:"systemPromptAppend,omitempty"`
	EditTool           string `json:"editTool,omitempty"` // "" = by the model's name (tool.ForModel)
	Line               int    `json:"-"`                  // where it is defined in the file
}

// DefaultMode is the mode a new session starts in (permissions.mode), and
// an imported one (sessions import).
func (c *Settings) DefaultMode() string { return agent.ModeFromConfig(c.permissionMode.V) }

// compactionConfig is the [compaction] table of the file, resolved with the
// CROW_* variables over it. Defaults are compaction.Defaults(): one Source
// of truth.
type compactionConfig struct {
	auto               Value[bool]
	threshold          Value[float64]
	target             Value[float64]
	keepRecent         Value[int] // /compact keeps this many messages
	keepTurns          Value[int]
	pruneProtectTurns  Value[int]
	pruneProtectTokens Value[int]
	pruneMinimum       Value[int]
	protectedTools     Value[[]string]
}

// providerSpec is one [providers.NAME] table of the file, resolved. The
// default provider's values are the Settings' BaseURL, APIKey and Headers
// (which flags and the environment override); the others are used as the
// file gives them. Every provider's key is found the same way: its
// api_key_env variable, else the credentials file `crow-acp login` writes.
type providerSpec struct {
	API       string // apiChat or apiResponses
	BaseURL   string
	APIKeyEnv string
	key       Value[string] // secret: never printed, never logged
	Headers   map[string]string
}

// ImageLimits are the limits of a prompt's images, which the agent checks
// with imagecheck.CheckPrompt apart from the text's limit.
func (c *Settings) ImageLimits() imagecheck.Limits {
	return imagecheck.Limits{ImageBytes: c.limits.imageBytes.V, PromptImageBytes: c.limits.promptImages.V}
}

// MCPLimits are the bounds of this process's stdio MCP servers.
func (c *Settings) MCPLimits() tool.MCPLimits { return c.mcp.limits() }
