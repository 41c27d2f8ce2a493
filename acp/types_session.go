package acp

import (
	"encoding/json"
	"path/filepath"
)

// Session management beyond new/load: list, resume, close, delete, and
// config options.

// --- session/list ---

type ListSessionsRequest struct {
	Cwd    string `json:"cwd,omitempty"`
	Cursor string `json:"cursor,omitempty"`
	// Archived (unstable): ArchivedExclude (also ""), Include or Only.
	Archived string `json:"archived,omitempty"`
	Meta     Meta   `json:"_meta,omitempty"`
}

func (r *ListSessionsRequest) Validate() error {
	switch r.Archived {
	case "", ArchivedExclude, ArchivedInclude, ArchivedOnly:
	default:
		return InvalidParams("Unknown archived filter %q: pass exclude, include or only.", r.Archived)
	}
	if r.Cwd != "" {
		return validateCwd(r.Cwd)
	}
	return nil
}

// SessionInfo is one entry of session/list.
type SessionInfo struct {
	SessionID             string   `json:"sessionId"`
	Cwd                   string   `json:"cwd"`
	AdditionalDirectories []string `json:"additionalDirectories,omitempty"`
	Title                 string   `json:"title,omitempty"`
	UpdatedAt             string   `json:"updatedAt,omitempty"` // ISO 8601
	// Archived (unstable) is on every entry, false included: crow-acp
	// advertises sessionCapabilities.archive, and an agent that does MUST
	// include it on every listed session (SDK 2.4 schema, SessionInfo).
	Archived bool `json:"archived"`
	Meta     Meta `json:"_meta,omitempty"`
}

type ListSessionsResponse struct {
	Sessions   []SessionInfo `json:"sessions"`
	NextCursor string        `json:"nextCursor,omitempty"`
	Meta       Meta          `json:"_meta,omitempty"`
}

// --- session/resume ---

type ResumeSessionRequest struct {
	SessionID             string        `json:"sessionId"`
	Cwd                   string        `json:"cwd"`
	AdditionalDirectories []string      `json:"additionalDirectories,omitempty"`
	McpServers            []McpServer   `json:"mcpServers,omitempty"`
	SystemPrompt          *SystemPrompt `json:"systemPrompt,omitempty"`
	Meta                  Meta          `json:"_meta,omitempty"`
}

func (r *ResumeSessionRequest) Validate() error {
	if err := needSessionID(r.SessionID, fromNewOrLoad); err != nil {
		return err
	}
	return validateSetup(r.Cwd, r.SystemPrompt, r.AdditionalDirectories)
}

type ResumeSessionResponse struct {
	Modes         *SessionModeState     `json:"modes,omitempty"`
	ConfigOptions []SessionConfigOption `json:"configOptions,omitempty"`
	Meta          Meta                  `json:"_meta,omitempty"`
}

// --- session/close, session/delete ---

type CloseSessionRequest struct {
	SessionID string `json:"sessionId"`
	Meta      Meta   `json:"_meta,omitempty"`
}

func (r *CloseSessionRequest) Validate() error {
	return needSessionID(r.SessionID, fromNewOrLoad)
}

type CloseSessionResponse struct {
	Meta Meta `json:"_meta,omitempty"`
}

type DeleteSessionRequest struct {
	SessionID string `json:"sessionId"`
	Meta      Meta   `json:"_meta,omitempty"`
}

func (r *DeleteSessionRequest) Validate() error {
	return needSessionID(r.SessionID, fromNewOrLoad)
}

type DeleteSessionResponse struct {
	Meta Meta `json:"_meta,omitempty"`
}

// --- session/set_config_option ---

// SetSessionConfigOptionRequest sets a select option (Value is the option's
// value id) or, with Type "boolean", a boolean option (Value is a bool).
type SetSessionConfigOptionRequest struct {
	SessionID string          `json:"sessionId"`
	ConfigID  string          `json:"configId"`
	Type      string          `json:"type,omitempty"`
	Value     json.RawMessage `json:"value"`
	Meta      Meta            `json:"_meta,omitempty"`
}

func (r *SetSessionConfigOptionRequest) Validate() error {
	if err := needSessionID(r.SessionID, fromNewOrLoad); err != nil {
		return err
	}
	if r.ConfigID == "" {
		return MissingParam("configId", "pass the id of one of the session's configOptions")
	}
	if len(r.Value) == 0 {
		return MissingParam("value", "pass one of the option's listed values")
	}
	return nil
}

// StringValue is the value of a select option, or an error for any other
// kind of value.
func (r *SetSessionConfigOptionRequest) StringValue() (string, error) {
	var s string
	if r.Type == "boolean" || json.Unmarshal(r.Value, &s) != nil {
		return "", InvalidParams("Config option %q takes one of its listed values, as a string.", r.ConfigID)
	}
	return s, nil
}

type SetSessionConfigOptionResponse struct {
	ConfigOptions []SessionConfigOption `json:"configOptions"`
	Meta          Meta                  `json:"_meta,omitempty"`
}

// validateDirs checks additionalDirectories: absolute paths only.
func validateDirs(dirs []string) error {
	for _, d := range dirs {
		if !filepath.IsAbs(d) {
			return InvalidParams("Every additionalDirectories entry must be an absolute path, got %q.", d)
		}
	}
	return nil
}
