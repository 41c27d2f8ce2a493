package agent

import (
	"context"
	"errors"
	"strings"

	"go.uber.org/zap"

	"github.com/crow-acp/crow-acp/acp"
	"github.com/crow-acp/crow-acp/internal/persistence"
)

// Session modes decide what needs the user's permission (see authorize).
const (
	ModeDefault     = "default"      // ask before edits, commands and MCP tools
	ModeAcceptEdits = "accept_edits" // edits inside the project apply without asking
	ModePlan        = "plan"         // read-only: edits and commands are refused, MCP tools always ask
	ModeBypass      = "bypass"       // nothing asks but file tools outside the project; commands are unconfined
)

var sessionModes = []acp.SessionMode{
	{ID: ModeDefault, Name: "Ask before edits",
		Description: "Reads inside the project run freely; edits, commands and MCP tools ask first."},
	{ID: ModeAcceptEdits, Name: "Auto-accept edits",
		Description: "Edits inside the project apply without asking; commands and MCP tools still ask."},
	{ID: ModePlan, Name: "Read-only planning",
		Description: "Read, search and plan only; edits and commands are refused, MCP tools ask every time."},
	{ID: ModeBypass, Name: "Bypass permissions",
		Description: "Edits, commands and MCP tools run without asking. Commands are not confined: they can read and change any file you can. Only the file tools still ask for paths outside the project."},
}

// ModeFromConfig is the mode named by configuration (permissions.mode), or
// ModeDefault for an unknown name.
func ModeFromConfig(name string) string {
	if validMode(name) {
		return name
	}
	return ModeDefault
}

// modeOption mirrors the mode as a config option (category "mode"), kept in
// step with session/set_mode and current_mode_update.
var modeOption = configOption{
	id:          configMode,
	name:        "Mode",
	description: "What needs your permission",
	category:    "mode",
	values: func(*core) []acp.SessionConfigSelectOption {
		out := make([]acp.SessionConfigSelectOption, len(sessionModes))
		for i, m := range sessionModes {
			out[i] = acp.SessionConfigSelectOption{Value: m.ID, Name: m.Name, Description: m.Description}
		}
		return out
	},
	current: func(_ *core, m sessionMeta) string { return currentMode(m) },
	set: func(ctx context.Context, a *Agent, sess *session, value string) error {
		return a.lifecycle.setMode(ctx, sess, value)
	},
}

func currentMode(m sessionMeta) string {
	if validMode(m.Mode) {
		return m.Mode
	}
	return ModeDefault
}

var _ acp.ModeSetter = (*Agent)(nil)

func validMode(id string) bool {
	for _, m := range sessionModes {
		if m.ID == id {
			return true
		}
	}
	return false
}

// modeState is the modes object of session/new and session/load.
func modeState(current string) *acp.SessionModeState {
	if !validMode(current) {
		current = ModeDefault
	}
	return &acp.SessionModeState{CurrentModeID: current, AvailableModes: sessionModes}
}

// sessionMode is the session's current mode, read from the store so that a
// session/set_mode during a turn applies to the very next tool call.
func (a *core) sessionMode(ctx context.Context, sessionID string) string {
	s, err := a.store.GetSession(context.WithoutCancel(ctx), sessionID)
	if err != nil {
		return ModeDefault
	}
	return currentMode(decodeMeta(s.Metadata))
}

// SetSessionMode switches the session's mode, persists it and confirms it
// with current_mode_update.
func (a *Agent) SetSessionMode(ctx context.Context, req *acp.SetSessionModeRequest) (*acp.SetSessionModeResponse, error) {
	if !validMode(req.ModeID) {
		ids := make([]string, len(sessionModes))
		for i, m := range sessionModes {
			ids[i] = m.ID
		}
		return nil, acp.InvalidParams("Unknown mode %q: use one of %s.", req.ModeID, strings.Join(ids, ", "))
	}
	sess := a.sessions.get(req.SessionID)
	if err := a.lifecycle.setMode(ctx, sess, req.ModeID); err != nil {
		return nil, err
	}
	// Clients that show config options see the mode selector move too.
	if s, err := a.store.GetSession(ctx, req.SessionID); err == nil {
		a.sendUpdate(ctx, sess, acp.SessionUpdate{ConfigOptionUpdate: &acp.ConfigOptionUpdate{
			ConfigOptions: a.lifecycle.configOptions(decodeMeta(s.Metadata))}})
	}
	return &acp.SetSessionModeResponse{}, nil
}

// setMode persists mode for the session and sends current_mode_update. It
// is the one place modes change (config options mirror it).
func (a *lifecycle) setMode(ctx context.Context, sess *session, mode string) error {
	sessionID := sess.id
	_, err := a.updateMeta(ctx, sess, func(_ *persistence.Session, m *sessionMeta) { m.Mode = mode })
	if errors.Is(err, persistence.ErrNotFound) {
		return unknownSession(sessionID)
	}
	if err != nil {
		return storeError("set mode", err)
	}
	a.log.Info("session mode set", zap.String("session", sessionID), zap.String("mode", mode))
	a.sendUpdate(ctx, sess, acp.SessionUpdate{CurrentModeUpdate: &acp.CurrentModeUpdate{CurrentModeID: mode}})
	return nil
}
