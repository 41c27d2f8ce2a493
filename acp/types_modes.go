package acp

import "context"

// SetSessionModeRequest is session/set_mode.
type SetSessionModeRequest struct {
	SessionID string `json:"sessionId"`
	ModeID    string `json:"modeId"`
	Meta      Meta   `json:"_meta,omitempty"`
}

func (r *SetSessionModeRequest) Validate() error {
	if err := needSessionID(r.SessionID, fromNewOrLoad); err != nil {
		return err
	}
	if r.ModeID == "" {
		return MissingParam("modeId", "pass one of the ids listed in the session's availableModes")
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
