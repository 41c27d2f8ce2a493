package agent

import (
	"context"
	"encoding/json"
	"errors"

	"go.uber.org/zap"

	"github.com/crow-acp/crow-acp/acp"
	"github.com/crow-acp/crow-acp/persistence"
)

// sessionMeta is what the agent keeps in persistence.Session.Metadata.
type sessionMeta struct {
	McpServers            []acp.McpServer `json:"mcpServers,omitempty"`
	AdditionalDirectories []string        `json:"additionalDirectories,omitempty"`
}

func decodeMeta(raw json.RawMessage) sessionMeta {
	var m sessionMeta
	if len(raw) > 0 {
		_ = json.Unmarshal(raw, &m) // metadata is ours; a bad blob is an empty one
	}
	return m
}

func encodeMeta(m sessionMeta) json.RawMessage {
	b, _ := json.Marshal(m)
	return b
}

// NewSession creates a session, persisted before it is announced.
func (a *Agent) NewSession(ctx context.Context, req *acp.NewSessionRequest) (*acp.NewSessionResponse, error) {
	s := &persistence.Session{
		ID:  newID("sess_"),
		Cwd: req.Cwd,
		Metadata: encodeMeta(sessionMeta{
			McpServers:            req.McpServers,
			AdditionalDirectories: req.AdditionalDirectories,
		}),
	}
	if err := a.store.CreateSession(ctx, s); err != nil {
		return nil, storeError("create session", err)
	}
	a.log.Info("session created", zap.String("session", s.ID), zap.String("cwd", s.Cwd))
	return &acp.NewSessionResponse{SessionID: s.ID}, nil
}

// LoadSession replays the whole stored conversation as session/update
// notifications and only then answers, as the protocol requires.
func (a *Agent) LoadSession(ctx context.Context, req *acp.LoadSessionRequest) (*acp.LoadSessionResponse, error) {
	s, err := a.store.GetSession(ctx, req.SessionID)
	if err != nil {
		if errors.Is(err, persistence.ErrNotFound) {
			return nil, acp.ResourceNotFound("unknown session %q: it was never created here or has been deleted", req.SessionID)
		}
		return nil, storeError("load session", err)
	}
	// The client names the session's root and MCP servers afresh on load.
	meta := decodeMeta(s.Metadata)
	meta.McpServers = req.McpServers
	meta.AdditionalDirectories = req.AdditionalDirectories
	s.Cwd, s.Metadata = req.Cwd, encodeMeta(meta)
	if err := a.store.UpdateSession(ctx, s); err != nil {
		return nil, storeError("load session", err)
	}
	msgs, err := a.store.Messages(ctx, s.ID, persistence.MessageFilter{})
	if err != nil {
		return nil, storeError("load session", err)
	}
	if err := a.replay(ctx, s.ID, msgs); err != nil {
		return nil, err
	}
	a.log.Info("session loaded", zap.String("session", s.ID), zap.Int("messages", len(msgs)))
	return &acp.LoadSessionResponse{}, nil
}
