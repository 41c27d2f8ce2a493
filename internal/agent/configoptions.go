package agent

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/crow-acp/crow-acp/acp"
	"github.com/crow-acp/crow-acp/internal/agent/request"
	"github.com/crow-acp/crow-acp/internal/persistence"
	"go.uber.org/zap"
)

// A config option is a per-session setting the client shows as a selector
// (session/new, load and resume return them; session/set_config_option
// changes one). Values persist in the session's metadata.
type configOption struct {
	id, name, description, category string
	// values lists the choices, in display order.
	values func(a *core) []acp.SessionConfigSelectOption
	// current is the session's value.
	current func(a *core, m sessionMeta) string
	// set applies value (already checked against values) to the session
	// and persists it.
	set func(ctx context.Context, a *Agent, sess *session, value string) error
}

// Config option ids.
const (
	configModel = "model"
	configMode  = "mode"
)

// configOptionList is every option, in priority order. The mode selector
// is kept in step with session/set_mode and current_mode_update (modes.go).
func (l *lifecycle) configOptionList() []configOption {
	return []configOption{modelOption, modeOption}
}

var modelOption = configOption{
	id:          configModel,
	name:        "Model",
	description: "The model that answers in this session",
	category:    "model",
	values: func(a *core) []acp.SessionConfigSelectOption {
		out := make([]acp.SessionConfigSelectOption, 0, len(a.cfg.Models))
		for _, m := range a.cfg.Models {
			// The window in use: discovered or learned from the endpoint
			// once known, not only the configured or assumed one.
			m = a.models.WithLearnedWindow(m)
			out = append(out, acp.SessionConfigSelectOption{Value: m.Name, Name: m.DisplayName(), Description: modelDescription(m)})
		}
		return out
	},
	current: func(a *core, m sessionMeta) string { return a.models.Named(m.Model).Name },
	set: func(ctx context.Context, a *Agent, sess *session, value string) error {
		_, err := a.updateMeta(ctx, sess, func(_ *persistence.Session, m *sessionMeta) { m.Model = value })
		return err
	},
}

func modelDescription(m request.Model) string {
	d := fmt.Sprintf("%s-token context", tokens(m.ContextWindow))
	switch {
	case m.WindowAssumed:
		d = "context window not known yet (not configured; asked from the endpoint)"
	case strings.HasPrefix(m.WindowSource, "discovered"):
		d += " (told by the server)"
	case strings.HasPrefix(m.WindowSource, request.LearnedPrefix):
		d += " (learned from the server)"
	}
	if m.Images {
		d += ", accepts images"
	}
	if m.Priced() {
		d += fmt.Sprintf(", %g/%g %s per million tokens in/out", m.InputPrice, m.OutputPrice, m.Currency)
	}
	return d
}

// tokens renders a token count the way model cards do: 128k, 1M, 4096.
func tokens(n int) string {
	switch {
	case n >= 1_000_000 && n%1_000_000 == 0:
		return fmt.Sprintf("%dM", n/1_000_000)
	case n >= 1000 && n%1000 == 0:
		return fmt.Sprintf("%dk", n/1000)
	default:
		return fmt.Sprint(n)
	}
}

// configOptions is the wire form of every option with the session's values.
func (l *lifecycle) configOptions(m sessionMeta) []acp.SessionConfigOption {
	opts := l.configOptionList()
	out := make([]acp.SessionConfigOption, 0, len(opts))
	for _, o := range opts {
		out = append(out, acp.SessionConfigOption{
			ID:           o.id,
			Name:         o.name,
			Description:  o.description,
			Category:     o.category,
			Type:         "select",
			CurrentValue: o.current(l.core, m),
			Options:      o.values(l.core),
		})
	}
	return out
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

// setMode persists mode for the session and sends current_mode_update. It
// is the one place modes change (config options mirror it).
func (l *lifecycle) setMode(ctx context.Context, sess *session, mode string) error {
	sessionID := sess.id
	_, err := l.updateMeta(ctx, sess, func(_ *persistence.Session, m *sessionMeta) { m.Mode = mode })
	if errors.Is(err, persistence.ErrNotFound) {
		return unknownSession(sessionID)
	}
	if err != nil {
		return storeError("set mode", err)
	}
	l.log.Info("session mode set", zap.String("session", sessionID), zap.String("mode", mode))
	l.sendUpdate(ctx, sess, acp.SessionUpdate{CurrentModeUpdate: &acp.CurrentModeUpdate{CurrentModeID: mode}})
	return nil
}
