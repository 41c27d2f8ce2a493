package acp

import "context"

// session/fork (unstable in SDK 2.4, sessionCapabilities.fork): a new
// session whose history is an existing one's.

// SessionForker implements session/fork.
type SessionForker interface {
	ForkSession(ctx context.Context, req *ForkSessionRequest) (*ForkSessionResponse, error)
}

type ForkSessionRequest struct {
	SessionID             string        `json:"sessionId"`
	Cwd                   string        `json:"cwd"`
	AdditionalDirectories []string      `json:"additionalDirectories,omitempty"`
	McpServers            []McpServer   `json:"mcpServers,omitempty"`
	SystemPrompt          *SystemPrompt `json:"systemPrompt,omitempty"`
	Meta                  Meta          `json:"_meta,omitempty"`
}

func (r *ForkSessionRequest) Validate() error {
	if err := needSessionID(r.SessionID, "pass the id of the session to fork, as session/new or session/list gave it"); err != nil {
		return err
	}
	return validateSetup(r.Cwd, r.SystemPrompt, r.AdditionalDirectories)
}

type ForkSessionResponse struct {
	SessionID     string                `json:"sessionId"`
	Modes         *SessionModeState     `json:"modes,omitempty"`
	ConfigOptions []SessionConfigOption `json:"configOptions,omitempty"`
	Meta          Meta                  `json:"_meta,omitempty"`
}
