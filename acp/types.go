package acp

import (
	"encoding/json"
	"path/filepath"
)

// ProtocolVersion is the newest ACP protocol version crow-acp speaks.
const ProtocolVersion = 1

// Meta is the `_meta` extension object every ACP type may carry. It is opaque:
// crow-acp passes it through and never requires it.
type Meta = json.RawMessage

// Implementation names a client or agent (clientInfo / agentInfo).
type Implementation struct {
	Name    string `json:"name"`
	Title   string `json:"title,omitempty"`
	Version string `json:"version"`
	Meta    Meta   `json:"_meta,omitempty"`
}

// --- initialize ---

type InitializeRequest struct {
	ProtocolVersion    int                `json:"protocolVersion"`
	ClientCapabilities ClientCapabilities `json:"clientCapabilities"`
	ClientInfo         *Implementation    `json:"clientInfo,omitempty"`
	Meta               Meta               `json:"_meta,omitempty"`
}

type ClientCapabilities struct {
	FS       FileSystemCapabilities     `json:"fs"`
	Terminal bool                       `json:"terminal,omitempty"`
	Session  *ClientSessionCapabilities `json:"session,omitempty"`
	Auth     *AuthCapabilities          `json:"auth,omitempty"`
	// Subagents (SDK 2.4, unstable): the client shows child sessions
	// announced with subagent_update (SupportsSubagents).
	Subagents *json.RawMessage `json:"subagents,omitempty"`
	// Elicitation: the modes of elicitation/create the client handles.
	Elicitation *ElicitationCapabilities `json:"elicitation,omitempty"`
	Meta        Meta                     `json:"_meta,omitempty"`
}

// AuthCapabilities says which auth method types the client can handle.
type AuthCapabilities struct {
	// Terminal: the client can run the agent's command with a terminal
	// method's args in an interactive terminal.
	Terminal bool `json:"terminal,omitempty"`
	Meta     Meta `json:"_meta,omitempty"`
}

// TerminalAuth reports whether the client can run terminal auth: the
// schema's auth.terminal, or the `_meta["terminal-auth"]: true` marker that
// clients predating it (Zed, the ACP registry's own check) send instead.
func (c ClientCapabilities) TerminalAuth() bool {
	if c.Auth != nil && c.Auth.Terminal {
		return true
	}
	var meta struct {
		TerminalAuth bool `json:"terminal-auth"`
	}
	return len(c.Meta) > 0 && json.Unmarshal(c.Meta, &meta) == nil && meta.TerminalAuth
}

type FileSystemCapabilities struct {
	ReadTextFile  bool `json:"readTextFile,omitempty"`
	WriteTextFile bool `json:"writeTextFile,omitempty"`
	Meta          Meta `json:"_meta,omitempty"`
}

// ClientSessionCapabilities holds the client's session-level markers. Unknown
// markers (e.g. the SDK 2.4 `compaction`, `notices`) are kept raw.
type ClientSessionCapabilities struct {
	ConfigOptions *json.RawMessage `json:"configOptions,omitempty"`
	Compaction    *json.RawMessage `json:"compaction,omitempty"`
	Notices       *json.RawMessage `json:"notices,omitempty"`
	Meta          Meta             `json:"_meta,omitempty"`
}

type InitializeResponse struct {
	ProtocolVersion   int               `json:"protocolVersion"`
	AgentCapabilities AgentCapabilities `json:"agentCapabilities"`
	AuthMethods       []AuthMethod      `json:"authMethods"`
	AgentInfo         *Implementation   `json:"agentInfo,omitempty"`
	Meta              Meta              `json:"_meta,omitempty"`
}

// Marker is an object-valued capability: present (`{}`) means supported.
type Marker struct {
	Meta Meta `json:"_meta,omitempty"`
}

type AgentCapabilities struct {
	LoadSession         bool                   `json:"loadSession"`
	PromptCapabilities  PromptCapabilities     `json:"promptCapabilities"`
	McpCapabilities     McpCapabilities        `json:"mcpCapabilities"`
	SessionCapabilities *SessionCapabilities   `json:"sessionCapabilities,omitempty"`
	Auth                *AgentAuthCapabilities `json:"auth,omitempty"`
	Meta                Meta                   `json:"_meta,omitempty"`
}

type PromptCapabilities struct {
	Image           bool `json:"image"`
	Audio           bool `json:"audio"`
	EmbeddedContext bool `json:"embeddedContext"`
	Meta            Meta `json:"_meta,omitempty"`
}

type McpCapabilities struct {
	HTTP bool `json:"http"`
	SSE  bool `json:"sse"`
	Meta Meta `json:"_meta,omitempty"`
}

type SessionCapabilities struct {
	List                  *Marker `json:"list,omitempty"`
	Delete                *Marker `json:"delete,omitempty"`
	AdditionalDirectories *Marker `json:"additionalDirectories,omitempty"`
	Resume                *Marker `json:"resume,omitempty"`
	Close                 *Marker `json:"close,omitempty"`
	// SystemPrompt (unstable, SDK 2.4): systemPrompt on new, load, resume.
	SystemPrompt *SessionSystemPromptCapabilities `json:"systemPrompt,omitempty"`

	// Fork (unstable, SDK 2.4): session/fork.
	Fork *Marker `json:"fork,omitempty"`
	// Title, Archive, Status (unstable, SDK 2.4): session/set_title,
	// session/archive and unarchive, session/status.
	Title   *Marker `json:"title,omitempty"`
	Archive *Marker `json:"archive,omitempty"`
	Status  *Marker `json:"status,omitempty"`
	Meta    Meta    `json:"_meta,omitempty"`
}

// AuthMethod is one way to sign in. Without Type it is an "agent" method:
// the client calls authenticate with its id. Type "terminal": the client
// runs the agent's own command with Args (and Env) in a terminal for the
// user, and never passes the method to authenticate.
type AuthMethod struct {
	Type        string            `json:"type,omitempty"`
	ID          string            `json:"id"`
	Name        string            `json:"name"`
	Description string            `json:"description,omitempty"`
	Args        []string          `json:"args,omitempty"`
	Env         map[string]string `json:"env,omitempty"`
	Meta        Meta              `json:"_meta,omitempty"`
}

// AuthMethodTerminal is the Type of a terminal auth method.
const AuthMethodTerminal = "terminal"

// --- authenticate ---

type AuthenticateRequest struct {
	MethodID string `json:"methodId"`
	Meta     Meta   `json:"_meta,omitempty"`
}

type AuthenticateResponse struct {
	Meta Meta `json:"_meta,omitempty"`
}

// --- sessions ---

type EnvVariable struct {
	Name  string `json:"name"`
	Value string `json:"value"`
	Meta  Meta   `json:"_meta,omitempty"`
}

type HTTPHeader struct {
	Name  string `json:"name"`
	Value string `json:"value"`
	Meta  Meta   `json:"_meta,omitempty"`
}

// McpServer is one MCP server the client asks the agent to use. Stdio
// servers have no Type; "http" and "sse" servers have a URL.
type McpServer struct {
	Type    string        `json:"type,omitempty"`
	Name    string        `json:"name"`
	Command string        `json:"command,omitempty"`
	Args    []string      `json:"args,omitempty"`
	Env     []EnvVariable `json:"env,omitempty"`
	URL     string        `json:"url,omitempty"`
	Headers []HTTPHeader  `json:"headers,omitempty"`
	Meta    Meta          `json:"_meta,omitempty"`
}

type NewSessionRequest struct {
	Cwd                   string        `json:"cwd"`
	AdditionalDirectories []string      `json:"additionalDirectories,omitempty"`
	McpServers            []McpServer   `json:"mcpServers"`
	SystemPrompt          *SystemPrompt `json:"systemPrompt,omitempty"`
	Meta                  Meta          `json:"_meta,omitempty"`
}

// validateSetup checks what session/new, load, resume and fork all set up
// a session with: its working directory, system prompt and extra roots.
func validateSetup(cwd string, sp *SystemPrompt, dirs []string) error {
	if err := validateCwd(cwd); err != nil {
		return err
	}
	if err := sp.Validate(); err != nil {
		return err
	}
	return validateDirs(dirs)
}

func (r *NewSessionRequest) Validate() error {
	return validateSetup(r.Cwd, r.SystemPrompt, r.AdditionalDirectories)
}

type SessionMode struct {
	ID          string `json:"id"`
	Name        string `json:"name"`
	Description string `json:"description,omitempty"`
	Meta        Meta   `json:"_meta,omitempty"`
}

type SessionModeState struct {
	CurrentModeID  string        `json:"currentModeId"`
	AvailableModes []SessionMode `json:"availableModes"`
	Meta           Meta          `json:"_meta,omitempty"`
}

// SessionConfigOption is a "select" config option (the only type crow-acp
// sends; boolean options need a client capability).
type SessionConfigOption struct {
	ID           string                      `json:"id"`
	Name         string                      `json:"name"`
	Description  string                      `json:"description,omitempty"`
	Category     string                      `json:"category,omitempty"`
	Type         string                      `json:"type"`
	CurrentValue string                      `json:"currentValue"`
	Options      []SessionConfigSelectOption `json:"options"`
	Meta         Meta                        `json:"_meta,omitempty"`
}

type SessionConfigSelectOption struct {
	Value       string `json:"value"`
	Name        string `json:"name"`
	Description string `json:"description,omitempty"`
	Meta        Meta   `json:"_meta,omitempty"`
}

type NewSessionResponse struct {
	SessionID     string                `json:"sessionId"`
	Modes         *SessionModeState     `json:"modes,omitempty"`
	ConfigOptions []SessionConfigOption `json:"configOptions,omitempty"`
	Meta          Meta                  `json:"_meta,omitempty"`
}

type LoadSessionRequest struct {
	SessionID             string        `json:"sessionId"`
	Cwd                   string        `json:"cwd"`
	AdditionalDirectories []string      `json:"additionalDirectories,omitempty"`
	McpServers            []McpServer   `json:"mcpServers"`
	SystemPrompt          *SystemPrompt `json:"systemPrompt,omitempty"`
	Meta                  Meta          `json:"_meta,omitempty"`
}

func (r *LoadSessionRequest) Validate() error {
	if err := needSessionID(r.SessionID, fromNewOrLoad); err != nil {
		return err
	}
	return validateSetup(r.Cwd, r.SystemPrompt, r.AdditionalDirectories)
}

type LoadSessionResponse struct {
	Modes         *SessionModeState     `json:"modes,omitempty"`
	ConfigOptions []SessionConfigOption `json:"configOptions,omitempty"`
	Meta          Meta                  `json:"_meta,omitempty"`
}

// --- prompt turn ---

type PromptRequest struct {
	SessionID string         `json:"sessionId"`
	Prompt    []ContentBlock `json:"prompt"`
	Meta      Meta           `json:"_meta,omitempty"`
}

func (r *PromptRequest) Validate() error {
	if err := needSessionID(r.SessionID, fromNewOrLoad); err != nil {
		return err
	}
	if r.Prompt == nil {
		return MissingParam("prompt", "pass an array of content blocks")
	}
	return nil
}

// StopReason is why a turn ended.
type StopReason string

const (
	StopEndTurn         StopReason = "end_turn"
	StopMaxTokens       StopReason = "max_tokens"
	StopMaxTurnRequests StopReason = "max_turn_requests"
	StopRefusal         StopReason = "refusal"
	StopCancelled       StopReason = "cancelled"
)

type PromptResponse struct {
	StopReason StopReason `json:"stopReason"`
	Usage      *Usage     `json:"usage,omitempty"` // unstable (SDK 2.4)
	Meta       Meta       `json:"_meta,omitempty"`
}

type CancelNotification struct {
	SessionID string `json:"sessionId"`
	Meta      Meta   `json:"_meta,omitempty"`
}

func (r *CancelNotification) Validate() error {
	return needSessionID(r.SessionID, fromNewOrLoad)
}

// CancelRequestNotification is `$/cancel_request`.
type CancelRequestNotification struct {
	RequestID json.RawMessage `json:"requestId"`
	Meta      Meta            `json:"_meta,omitempty"`
}

// --- session/update ---

type SessionNotification struct {
	SessionID string        `json:"sessionId"`
	Update    SessionUpdate `json:"update"`
	Meta      Meta          `json:"_meta,omitempty"`
}

// ContentChunk is the payload of the *_message_chunk and thought updates.
type ContentChunk struct {
	Content   ContentBlock `json:"content"`
	MessageID string       `json:"messageId,omitempty"`
	Meta      Meta         `json:"_meta,omitempty"`
}

type ToolKind string

const (
	ToolKindRead       ToolKind = "read"
	ToolKindEdit       ToolKind = "edit"
	ToolKindDelete     ToolKind = "delete"
	ToolKindMove       ToolKind = "move"
	ToolKindSearch     ToolKind = "search"
	ToolKindExecute    ToolKind = "execute"
	ToolKindThink      ToolKind = "think"
	ToolKindFetch      ToolKind = "fetch"
	ToolKindSwitchMode ToolKind = "switch_mode"
	ToolKindOther      ToolKind = "other"
)

type ToolCallStatus string

const (
	ToolStatusPending    ToolCallStatus = "pending"
	ToolStatusInProgress ToolCallStatus = "in_progress"
	ToolStatusCompleted  ToolCallStatus = "completed"
	ToolStatusFailed     ToolCallStatus = "failed"
)

type ToolCallLocation struct {
	Path string `json:"path"`
	Line *int   `json:"line,omitempty"`
	Meta Meta   `json:"_meta,omitempty"`
}

// ToolCall announces a new tool call (`sessionUpdate: "tool_call"`).
type ToolCall struct {
	ToolCallID string             `json:"toolCallId"`
	Title      string             `json:"title"`
	Kind       ToolKind           `json:"kind,omitempty"`
	Status     ToolCallStatus     `json:"status,omitempty"`
	Content    []ToolCallContent  `json:"content,omitempty"`
	Locations  []ToolCallLocation `json:"locations,omitempty"`
	RawInput   json.RawMessage    `json:"rawInput,omitempty"`
	RawOutput  json.RawMessage    `json:"rawOutput,omitempty"`
	Meta       Meta               `json:"_meta,omitempty"`
}

// ToolCallUpdate changes fields of an announced tool call; nil/empty fields
// are left unchanged by the client.
type ToolCallUpdate struct {
	ToolCallID string             `json:"toolCallId"`
	Title      string             `json:"title,omitempty"`
	Kind       ToolKind           `json:"kind,omitempty"`
	Status     ToolCallStatus     `json:"status,omitempty"`
	Content    []ToolCallContent  `json:"content,omitempty"`
	Locations  []ToolCallLocation `json:"locations,omitempty"`
	RawInput   json.RawMessage    `json:"rawInput,omitempty"`
	RawOutput  json.RawMessage    `json:"rawOutput,omitempty"`
	Meta       Meta               `json:"_meta,omitempty"`
}

type PlanEntry struct {
	Content  string `json:"content"`
	Priority string `json:"priority"` // high, medium, low
	Status   string `json:"status"`   // pending, in_progress, completed
	Meta     Meta   `json:"_meta,omitempty"`
}

type Plan struct {
	Entries []PlanEntry `json:"entries"`
	Meta    Meta        `json:"_meta,omitempty"`
}

type AvailableCommandInput struct {
	Hint string `json:"hint"`
	Meta Meta   `json:"_meta,omitempty"`
}

type AvailableCommand struct {
	Name        string                 `json:"name"`
	Description string                 `json:"description"`
	Input       *AvailableCommandInput `json:"input,omitempty"`
	Meta        Meta                   `json:"_meta,omitempty"`
}

type AvailableCommandsUpdate struct {
	AvailableCommands []AvailableCommand `json:"availableCommands"`
	Meta              Meta               `json:"_meta,omitempty"`
}

type CurrentModeUpdate struct {
	CurrentModeID string `json:"currentModeId"`
	Meta          Meta   `json:"_meta,omitempty"`
}

type ConfigOptionUpdate struct {
	ConfigOptions []SessionConfigOption `json:"configOptions"`
	Meta          Meta                  `json:"_meta,omitempty"`
}

type SessionInfoUpdate struct {
	Title     *string `json:"title,omitempty"`
	UpdatedAt *string `json:"updatedAt,omitempty"`
	Meta      Meta    `json:"_meta,omitempty"`
}

type Cost struct {
	Amount   float64 `json:"amount"`
	Currency string  `json:"currency"`
	Meta     Meta    `json:"_meta,omitempty"`
}

type UsageUpdate struct {
	Used int   `json:"used"`
	Size int   `json:"size"`
	Cost *Cost `json:"cost,omitempty"`
	Meta Meta  `json:"_meta,omitempty"`
}

// --- client methods (agent → client) ---

type PermissionOptionKind string

const (
	PermissionAllowOnce    PermissionOptionKind = "allow_once"
	PermissionAllowAlways  PermissionOptionKind = "allow_always"
	PermissionRejectOnce   PermissionOptionKind = "reject_once"
	PermissionRejectAlways PermissionOptionKind = "reject_always"
)

type PermissionOption struct {
	OptionID string               `json:"optionId"`
	Name     string               `json:"name"`
	Kind     PermissionOptionKind `json:"kind"`
	Meta     Meta                 `json:"_meta,omitempty"`
}

type RequestPermissionRequest struct {
	SessionID string             `json:"sessionId"`
	ToolCall  ToolCallUpdate     `json:"toolCall"`
	Options   []PermissionOption `json:"options"`
	Meta      Meta               `json:"_meta,omitempty"`
}

// RequestPermissionOutcome is `{outcome:"selected", optionId}` or
// `{outcome:"cancelled"}`.
type RequestPermissionOutcome struct {
	Outcome  string `json:"outcome"`
	OptionID string `json:"optionId,omitempty"`
	Meta     Meta   `json:"_meta,omitempty"`
}

type RequestPermissionResponse struct {
	Outcome RequestPermissionOutcome `json:"outcome"`
	Meta    Meta                     `json:"_meta,omitempty"`
}

type ReadTextFileRequest struct {
	SessionID string `json:"sessionId"`
	Path      string `json:"path"`
	Line      *int   `json:"line,omitempty"`
	Limit     *int   `json:"limit,omitempty"`
	Meta      Meta   `json:"_meta,omitempty"`
}

type ReadTextFileResponse struct {
	Content string `json:"content"`
	Meta    Meta   `json:"_meta,omitempty"`
}

type WriteTextFileRequest struct {
	SessionID string `json:"sessionId"`
	Path      string `json:"path"`
	Content   string `json:"content"`
	Meta      Meta   `json:"_meta,omitempty"`
}

type WriteTextFileResponse struct {
	Meta Meta `json:"_meta,omitempty"`
}

type CreateTerminalRequest struct {
	SessionID       string        `json:"sessionId"`
	Command         string        `json:"command"`
	Args            []string      `json:"args,omitempty"`
	Env             []EnvVariable `json:"env,omitempty"`
	Cwd             string        `json:"cwd,omitempty"`
	OutputByteLimit *int          `json:"outputByteLimit,omitempty"`
	Meta            Meta          `json:"_meta,omitempty"`
}

type CreateTerminalResponse struct {
	TerminalID string `json:"terminalId"`
	Meta       Meta   `json:"_meta,omitempty"`
}

// TerminalRequest addresses one terminal (output, wait_for_exit, kill, release).
type TerminalRequest struct {
	SessionID  string `json:"sessionId"`
	TerminalID string `json:"terminalId"`
	Meta       Meta   `json:"_meta,omitempty"`
}

type TerminalExitStatus struct {
	ExitCode *int    `json:"exitCode,omitempty"`
	Signal   *string `json:"signal,omitempty"`
	Meta     Meta    `json:"_meta,omitempty"`
}

type TerminalOutputResponse struct {
	Output     string              `json:"output"`
	Truncated  bool                `json:"truncated"`
	ExitStatus *TerminalExitStatus `json:"exitStatus,omitempty"`
	Meta       Meta                `json:"_meta,omitempty"`
}

type WaitForTerminalExitResponse = TerminalExitStatus

// Hints of a missing sessionId: where the client finds the id.
const (
	fromNewOrLoad = "pass the id that session/new or session/load returned"
	fromList      = "pass the id that session/list returned"
)

// needSessionID refuses an empty sessionId; hint says where the id comes from.
func needSessionID(id, hint string) error {
	if id == "" {
		return MissingParam("sessionId", hint)
	}
	return nil
}

func validateCwd(cwd string) error {
	if cwd == "" {
		return MissingParam("cwd", "pass the absolute path of the project directory")
	}
	if !filepath.IsAbs(cwd) {
		return InvalidParams("The cwd parameter must be an absolute path, got %q.", cwd)
	}
	return nil
}
