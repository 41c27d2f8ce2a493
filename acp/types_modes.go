package acp

import "context"

// SetSessionModeRequest is session/set_mode.
type SetSessionModeRequest struct {
	SessionID string `json:"sessionId"`
	ModeID    string `json:"modeId"`
	Meta      Meta   `json:"_meta,omitempty"`
}

func (r *SetSessionModeRequest) Validate() error {
	if r.SessionID == "" {
		return InvalidParams("sessionId is required")
	}
	if r.ModeID == "" {
		return InvalidParams("modeId is required")
	}
	return nil
}

type SetSessionModeResponse struct {
	Meta Meta `json:"_meta,omitempty"`
}

// ModeSetter implements session/set_mode.
type ModeSetter interface {
	SetSessionMode(ctx context.Context, req *SetSessionModeRequest) (*SetSessionModeResponse, error)
}
